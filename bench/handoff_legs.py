#!/usr/bin/env python3
"""The legs of fsd's write -> read handoff, from the scheduler's wakeups.

Reads `perf sched timehist -w` (stdin), recorded while bench/fsd_cluster's
ping-pong ran on a two-node local cluster, and prints the median of each
leg of a handoff, per direction: the wakeup that ends each leg is a
message (or a condition variable) handed from one thread to the next, so
the instants are those of the handoff itself, not of a tracer in it.

  handoff_legs.py FSD1 DLMD1 NETD1 FSD2 DLMD2 NETD2   (the daemons' pids)

fsd's own threads are told apart by name (fsd-dispatch, fsd-downconv,
fsd-flush; FUSE's workers are "fsd"); the two clients are the two
fsd_cluster threads that wake each other most (the pipe between them).

Handoffs with and without a write home are counted apart: a write in
the coarse clock's tick of the one before changes no time (as on Linux,
fsd/inode.c inode_mctime_current), so when a round is shorter than a
tick some rounds change nothing and their handoffs write nothing home.
Leg 5 tells them apart: WRITE_HOME_US or more is a write home (four
writes and four flushes; the flush of the kernel's pages and the send
alone take a few tens of us).
"""
import collections
import re
import statistics
import sys

WRITE_HOME_US = 150
LINE = re.compile(r'^\s*([\d.]+)\s+\[\d+\]\s+(\S+?)\[(\d+)(?:/(\d+))?\]\s+'
                  r'awakened: (\S+?)\[(\d+)(?:/(\d+))?\]')
FSD_ROLES = {'fsd-dispatch': 'disp', 'fsd-downconv': 'dc', 'fsd-flush': 'flush',
             'fsd-inval': 'inval', 'fsd': 'wk'}
LEGS = [
    "the pipe -> the client's first request reaches a worker",
    "worker -> its dlmd (lock request)",
    "request -> BAST at the holder's fsd (dlmd, netd, netd, dlmd)",
    "BAST: dispatch thread -> the thread that converts",
    "flush of the kernel's pages, write home -> convert sent",
    "convert -> grant at the requester's fsd",
    "grant: dispatch thread -> the waiting worker",
    "worker: refresh, reply to the first request",
    "client -> its second request reaches a worker",
    "second request served (its data read), reply",
    "reply -> the client's pipe to the other client",
]


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    pids = [int(a) for a in sys.argv[1:]]
    fsd = {pids[0]: 1, pids[3]: 2}
    daemon = {pids[1]: (1, 'dlmd'), pids[2]: (1, 'netd'),
              pids[4]: (2, 'dlmd'), pids[5]: (2, 'netd')}

    def role(comm, tid, pid):
        tid = int(tid)
        pid = int(pid) if pid else tid
        if pid in fsd and comm in FSD_ROLES:
            return (fsd[pid], FSD_ROLES[comm])
        if tid in daemon:
            return daemon[tid]
        if comm == 'fsd_cluster':
            return (tid, 'client')
        return None

    ev = []
    for line in sys.stdin:
        m = LINE.match(line)
        if not m:
            continue
        x = role(m.group(2), m.group(3), m.group(4))
        y = role(m.group(5), m.group(6), m.group(7))
        if x and y:
            ev.append((float(m.group(1)) * 1e6, x, y))
    pairs = collections.Counter((x[0], y[0]) for _, x, y in ev
                                if x[1] == 'client' and y[1] == 'client')
    if not pairs:
        sys.exit("handoff_legs: no ping-pong clients in the trace")
    a, b = pairs.most_common(1)[0][0]
    woke1 = collections.Counter(x[0] for _, x, y in ev if x[1] == 'client' and y == (1, 'wk'))
    node = {a: 1, b: 2} if woke1[a] >= woke1[b] else {a: 2, b: 1}
    client = {n: c for c, n in node.items()}
    res = {1: [], 2: []}
    i = 0
    while i < len(ev):
        t, x, y = ev[i]
        if not (x[1] == 'client' and y[1] == 'client' and x[0] in node and y[0] in node):
            i += 1
            continue
        B = node[y[0]]          # requests the lock
        A = 3 - B               # holds it, writes home
        c = (client[B], 'client')
        steps = [
            lambda e: e[1] == c and e[2] == (B, 'wk'),
            lambda e: e[1] == (B, 'wk') and e[2] == (B, 'dlmd'),
            lambda e: e[1] == (A, 'dlmd') and e[2] == (A, 'disp'),
            lambda e: e[1] == (A, 'disp') and e[2] in ((A, 'flush'), (A, 'dc')),
            lambda e: e[1] in ((A, 'flush'), (A, 'dc')) and e[2] == (A, 'dlmd'),
            lambda e: e[1] == (B, 'dlmd') and e[2] == (B, 'disp'),
            lambda e: e[1] == (B, 'disp') and e[2] == (B, 'wk'),
            lambda e: e[1] == (B, 'wk') and e[2] == c,
            lambda e: e[1] == c and e[2] == (B, 'wk'),
            lambda e: e[1] == (B, 'wk') and e[2] == c,
            lambda e: e[1] == c and e[2][1] == 'client',
        ]
        ts, j = [t], i + 1
        for step in steps:
            while j < len(ev) and ev[j][0] < t + 50000 and not step(ev[j]):
                j += 1
            if j == len(ev) or ev[j][0] >= t + 50000:
                break
            ts.append(ev[j][0])
            j += 1
        if len(ts) == len(steps) + 1:
            res[B].append([ts[k + 1] - ts[k] for k in range(len(steps))])
            i = j - 1
        else:
            i += 1
    for B in (2, 1):
        if not res[B]:
            print("node%d asks: no complete handoff found" % B)
            continue
        for home in (True, False):
            r = [x for x in res[B] if (x[4] >= WRITE_HOME_US) == home]
            print("node%d asks, node%d gives the lock %s: %d of %d handoffs, median us"
                  % (B, 3 - B, "and writes home" if home else "with nothing to write home",
                     len(r), len(res[B])))
            if not r:
                continue
            for k, name in enumerate(LEGS):
                print("  %-64s %6.0f" % (name, statistics.median(x[k] for x in r)))
            print("  %-64s %6.0f" % ("the handoff (median of the sums)",
                                     statistics.median(sum(x) for x in r)))


if __name__ == '__main__':
    main()
