#!/usr/bin/env bash
# Two nodes of the local cluster on one volume, racing for names: a path
# operation never answers ESTALE to the user (FUSE names an inode by
# number alone and fsd holds no lock on what the kernel merely caches, so
# fsd must close the races the kernel's OCFS2 closes with its dentry and
# OPEN locks). fsck.ocfs2 finds the volume clean at the end.
#
# FSD_STALE_SECS (default 6) is how long each race runs.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

SECS=${FSD_STALE_SECS:-6}

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()

echo "-- setup"
mount_two

echo "-- a directory that moves between directories"
# moving_dir A B SECS: directory sub moves between a and b on node2 (B);
# node1 (A) meanwhile keeps its kernel's rename lock and the directories'
# locks busy (renames across directories, creates and unlinks in a and
# b), and walks paths through sub. The kernel has one dentry for a
# directory: a lookup that finds sub where another node put it must find
# no other dentry of it left to move, which the kernel does only with
# locks it merely tries (d_splice_alias), else ESTALE. (Not checked: a
# rename on node1 of sub itself, whose lookup holds the very locks the
# drop of the old dentry needs, see doc/cluster-cache.md.)
moving_dir() {
	python3 - "$@" <<'PY'
import errno, os, sys, time
a, b, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
for d in ("a", "b", "x", "y"):
    os.makedirs(os.path.join(a, d), exist_ok=True)
os.makedirs(os.path.join(a, "a/sub"), exist_ok=True)
open(os.path.join(a, "x/t"), "w").close()
open(os.path.join(a, "a/sub/f"), "w").close()
end = time.time() + secs
def mover(root, stop):
    # sub from wherever it is to the other directory, until stop
    while time.time() < stop:
        for s, d in (("a", "b"), ("b", "a")):
            try:
                os.rename(os.path.join(root, s, "sub"), os.path.join(root, d, "sub"))
            except FileNotFoundError:
                pass
def busy(root, stop, me):
    i = 0
    while time.time() < stop:
        i += 1
        for s, d in (("x", "y"), ("y", "x")):
            try:
                os.rename(os.path.join(root, s, "t"), os.path.join(root, d, "t"))
            except FileNotFoundError:
                pass
        for d in ("a", "b"):
            p = os.path.join(root, d, "n%d.%d" % (me, i % 4))
            open(p, "w").close()
            os.unlink(p)
kids = []
for fn, root, args in ((mover, b, ()), (busy, a, (1,)), (busy, a, (2,))):
    pid = os.fork()
    if pid == 0:
        try:
            fn(root, end, *args)
            os._exit(0)
        except OSError as e:
            print("%s in %s: %s" % (fn.__name__, root, e))
            os._exit(1)
    kids.append(pid)
stale = walks = 0
while time.time() < end:
    for d in ("a", "b"):
        try:
            os.stat(os.path.join(a, d, "sub", "f"))
            walks += 1
        except FileNotFoundError:
            pass
        except OSError as e:
            if e.errno != errno.ESTALE:
                raise
            stale += 1
bad = sum(os.waitpid(k, 0)[1] != 0 for k in kids)
print("%d ESTALE in %d walks on node1; %d helpers failed" % (stale, walks, bad))
sys.exit(1 if stale or bad or walks == 0 else 0)
PY
}
check "no path walk through a moving directory is ESTALE" \
    timeout -s KILL $((SECS + 60)) bash -c "$(declare -f moving_dir); moving_dir '${M[1]}/mv' '${M[2]}/mv' $SECS"

echo "-- open(O_CREAT) of a name where another node makes and removes a directory"
# create_race A B SECS: node2 (B) makes directory n and removes it again,
# over and over; node1 (A) opens n with O_CREAT (no O_EXCL): a descriptor
# of the file it made, or EISDIR, never ESTALE. (A fifo or a symlink
# found there is ESTALE for the kernel's retry to open, and an inode that
# another node deletes between the kernel's lookup and its next request
# is ESTALE too: the retry may meet that race once more, see
# doc/cluster-cache.md. Node2 keeps each directory a few milliseconds, so
# that node1's retries mostly find it.)
create_race() {
	python3 - "$@" <<'PY'
import errno, os, sys, time
a, b, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.makedirs(a, exist_ok=True)
end = time.time() + secs
pid = os.fork()
if pid == 0:
    n = os.path.join(b, "n")
    i = 0
    while time.time() < end:
        i += 1
        try:
            os.mkdir(n)
        except FileExistsError:
            pass
        time.sleep(0.003)
        try:
            os.rmdir(n)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENOTDIR):
                print("node2: %s" % e)
                os._exit(1)
    os._exit(0)
stale = opens = 0
others = {}
n = os.path.join(a, "n")
while time.time() < end:
    try:
        fd = os.open(n, os.O_WRONLY | os.O_CREAT, 0o644)
        os.close(fd)
        opens += 1
        try:
            os.unlink(n)
        except OSError:
            pass
    except OSError as e:
        if e.errno == errno.ESTALE:
            stale += 1
        elif e.errno == errno.EISDIR:
            others[e.errno] = others.get(e.errno, 0) + 1
        else:
            raise
bad = os.waitpid(pid, 0)[1] != 0
print("%d ESTALE, %d opens, other answers %s; node2 %s" %
      (stale, opens, {errno.errorcode[k]: v for k, v in others.items()}, "failed" if bad else "ok"))
sys.exit(1 if stale or bad or opens == 0 else 0)
PY
}
check "open(O_CREAT) racing with another node's mkdir and rmdir is never ESTALE" \
    timeout -s KILL $((SECS + 60)) bash -c "$(declare -f create_race); create_race '${M[1]}/cr' '${M[2]}/cr' $SECS"

echo "-- end"
check "node2 removes everything" rm -rf "${M[2]}/mv" "${M[2]}/cr"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
