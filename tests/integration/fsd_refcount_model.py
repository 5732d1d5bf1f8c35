#!/usr/bin/env python3
"""fsx-style random operations on two files that share clusters, each
checked against its own model after every few operations.

usage: fsd_refcount_model.py SEED OPS CLUSTER A B [EVERY]

A and B exist already with the same contents (B a reflink of A). The
operations: writes of random bytes at random places (within a cluster,
across clusters, past the end), truncates up and down, hole punches and
zeroed ranges through fallocate(2), and copy_file_range(2) between the
two (cluster-aligned ranges share clusters, others are copied), both
files read back every EVERY operations (default 10). Exits 1 at the
first difference, naming the operations that led to it.
"""
import ctypes
import os
import random
import sys

FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
FALLOC_FL_ZERO_RANGE = 16
MAX_SIZE = 3 << 20

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def main():
    seed, ops, cs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    paths = sys.argv[4:6]
    every = int(sys.argv[6]) if len(sys.argv) > 6 else 10
    rnd = random.Random(seed)
    fds = [os.open(p, os.O_RDWR) for p in paths]
    with open(paths[0], 'rb') as f:
        first = f.read()
    models = [bytearray(first), bytearray(first)]
    log = []

    def verify(what):
        for k in (0, 1):
            size = os.fstat(fds[k]).st_size
            data = os.pread(fds[k], size + 1, 0)
            if size != len(models[k]) or data != bytes(models[k]):
                at = next((i for i in range(min(len(data), len(models[k])))
                           if data[i] != models[k][i]), min(len(data), len(models[k])))
                print("file %s differs from its model at byte %d (size %d, model %d) after %s"
                      % ("AB"[k], at, size, len(models[k]), what))
                print("last operations: " + "; ".join(log[-8:]))
                sys.exit(1)

    def place(m):
        # somewhere in the file, near its end, or a little past it
        r = rnd.random()
        if r < 0.7 and len(m) > 0:
            return rnd.randrange(len(m))
        if r < 0.85:
            return rnd.randrange(cs) * 0 + (len(m) // cs) * cs
        return min(len(m) + rnd.randrange(4 * cs), MAX_SIZE - 1)

    for i in range(ops):
        k = rnd.randrange(2)
        fd, m = fds[k], models[k]
        r = rnd.random()
        if r < 0.45:
            off = place(m)
            n = rnd.choice([1, 100, cs // 2, cs, cs + 7, 3 * cs, 17 * cs // 3])
            n = min(n, MAX_SIZE - off)
            buf = rnd.randbytes(n)
            os.pwrite(fd, buf, off)
            if off > len(m):
                m.extend(bytes(off - len(m)))
            m[off:off + n] = buf
            log.append("%s: write %d at %d" % ("AB"[k], n, off))
        elif r < 0.55:
            size = rnd.choice([0, rnd.randrange(MAX_SIZE // 2), len(m) // 2,
                               len(m) + rnd.randrange(3 * cs), (len(m) // cs) * cs])
            os.ftruncate(fd, size)
            if size < len(m):
                del m[size:]
            else:
                m.extend(bytes(size - len(m)))
            log.append("%s: truncate to %d" % ("AB"[k], size))
        elif r < 0.65 and len(m) > 0:
            off = rnd.randrange(len(m))
            n = rnd.choice([1, cs, 2 * cs + 5, 8 * cs])
            zero = rnd.random() < 0.5
            mode = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE if zero else \
                FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
            fallocate(fd, mode, off, n)
            end = min(off + n, len(m))
            m[off:end] = bytes(end - off)
            log.append("%s: %s %d at %d" % ("AB"[k], "zero" if zero else "punch", n, off))
        elif r < 0.85:
            src = 1 - k
            sm = models[src]
            if not sm:
                continue
            aligned = rnd.random() < 0.7
            if aligned:
                off_in = rnd.randrange(len(sm) // cs + 1) * cs
                off_out = rnd.randrange(len(m) // cs + 2) * cs
                n = rnd.randrange(1, 40) * cs
            else:
                off_in = rnd.randrange(len(sm))
                off_out = rnd.randrange(len(m) + 1)
                n = rnd.randrange(1, 5 * cs)
            if off_out >= MAX_SIZE:
                continue
            n = min(n, MAX_SIZE - off_out)
            # a short copy is allowed: go on from there, as cp(1) does
            done = 0
            while done < n:
                got = os.copy_file_range(fds[src], fd, n - done, off_in + done, off_out + done)
                if got == 0:
                    break
                done += got
            want = min(n, max(0, len(sm) - off_in))
            if done != want:
                print("copy_file_range of %d at %d to %d returned %d, expected %d"
                      % (n, off_in, off_out, done, want))
                sys.exit(1)
            chunk = sm[off_in:off_in + done]
            if off_out > len(m):
                m.extend(bytes(off_out - len(m)))
            m[off_out:off_out + done] = chunk
            log.append("%s->%s: copy_file_range %d from %d to %d" %
                       ("AB"[src], "AB"[k], done, off_in, off_out))
        else:
            os.fsync(fd)
            log.append("%s: fsync" % "AB"[k])
        if i % every == every - 1 or i == ops - 1:
            verify(log[-1] if log else "nothing")
    print("%d operations, sizes %d and %d" % (ops, len(models[0]), len(models[1])))


main()
