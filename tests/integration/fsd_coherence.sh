#!/usr/bin/env bash
# Two nodes of the local cluster on one volume, where the kernel's page
# cache and waits meet the cluster locks: a write through a shared mapping
# on one node (with or without msync) is what the other node reads, with
# read(2) or its own mapping, and a mapping sees the other node's later
# writes; a flock(2) waiting for the other node ends with EINTR when a
# signal interrupts it, leaving no request queued behind; an inode that
# another node deleted and made again in the same block is stale to a
# holder of the old one. fsck.ocfs2
# finds the volume clean at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()

echo "-- setup"
mount_two

echo "-- shared mappings"
# mmap_coherence A B: A and B are one file seen by node1 and node2. One
# process maps it on both nodes and checks each direction; a failed check
# names itself.
mmap_coherence() {
	python3 - "$@" <<'PY'
import mmap, os, sys
a, b = sys.argv[1], sys.argv[2]
fails = 0
def check(desc, want, got):
    global fails
    if want != got:
        fails += 1
        print(f"{desc}: want {want!r}, got {got!r}")
def pread(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, n, off)
    finally:
        os.close(fd)
fa = os.open(a, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fa, 16384)
ma = mmap.mmap(fa, 16384)
fb = os.open(b, os.O_RDWR)
mb = mmap.mmap(fb, 16384)
ro = os.open(b, os.O_RDONLY)
mr = mmap.mmap(ro, 16384, prot=mmap.PROT_READ)
check("node2's mappings start out zero", b"\0" * 8, bytes(mb[0:4]) + bytes(mr[8192:8196]))
ma[100:105] = b"first"
check("node2's read(2) of node1's mmap write (no msync)", b"first", pread(b, 100, 5))
ma[200:206] = b"second"
ma.flush()
check("node2's read(2) of node1's mmap write (msync)", b"second", pread(b, 200, 6))
ma[300:305] = b"third"
check("node2's mapping of node1's mmap write", b"third", bytes(mb[300:305]))
mb[4106:4111] = b"back!"
check("node1's read(2) of node2's mmap write", b"back!", pread(a, 4106, 5))
check("node1's mapping of node2's mmap write", b"back!", bytes(ma[4106:4111]))
ma[8192:8197] = b"again"
check("node2's read-only mapping of node1's later mmap write", b"again", bytes(mr[8192:8197]))
os.pwrite(fb, b"plain", 12288)
check("node1's mapping of node2's later write(2)", b"plain", bytes(ma[12288:12293]))
for m in (ma, mb, mr):
    m.close()
for fd in (fa, fb, ro):
    os.close(fd)
sys.exit(1 if fails else 0)
PY
}
check "writes through a shared mapping are seen across nodes, both ways" \
    mmap_coherence "${M[1]}/mm" "${M[2]}/mm"
check "node1 reads what the mappings left" \
    sh -c "[ \"\$(dd if='${M[1]}/mm' bs=1 skip=100 count=5 status=none)\" = first ]"

# mmap_race A B: for 3 s a process on node1 counts up in its mapping of
# A while this one reads B with read(2): never a count going back, and at
# the end the last one. The two nodes take the file from each other
# hundreds of times, the writeback of each downconvert among them.
mmap_race() {
	python3 - "$@" <<'PY'
import mmap, os, sys, time
a, b = sys.argv[1], sys.argv[2]
fa = os.open(a, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fa, 4096)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    m = mmap.mmap(fa, 4096)
    n, end = 0, time.monotonic() + 3
    while time.monotonic() < end:
        n += 1
        m[0:8] = n.to_bytes(8, "little")
    os.write(w, n.to_bytes(8, "little"))
    os._exit(0)
fb = os.open(b, os.O_RDONLY)
last, reads = 0, 0
while os.waitpid(pid, os.WNOHANG) == (0, 0):
    v = int.from_bytes(os.pread(fb, 8, 0), "little")
    if v < last:
        sys.exit(f"read {v} after {last}")
    last, reads = v, reads + 1
final = int.from_bytes(os.read(r, 8), "little")
v = int.from_bytes(os.pread(fb, 8, 0), "little")
if v != final:
    sys.exit(f"read {v} at the end, node1 wrote {final} last")
print(f"{reads} reads, up to {final}")
PY
}
check "node2 reads node1's mapping count up, never back (3 s)" \
    timeout -s KILL 60 bash -c "$(declare -f mmap_race); mmap_race '${M[1]}/race' '${M[2]}/race'"
# trunc_dirty A B: node1 dirties four pages of its mapping of A, node2
# truncates B to one page. node2 holds the RW lock EX and waits for the
# META lock, whose downconvert on node1 writes the pages back.
trunc_dirty() {
	python3 - "$@" <<'PY'
import mmap, os, subprocess, sys
a, b = sys.argv[1], sys.argv[2]
fa = os.open(a, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fa, 16384)
m = mmap.mmap(fa, 16384)
for pg in range(4):
    m[pg * 4096:pg * 4096 + 4] = b"pg%d!" % pg
subprocess.run(["timeout", "-s", "KILL", "20", "truncate", "-s", "4096", b], check=True)
with open(b, "rb") as f:
    got = f.read()
if got[:4] != b"pg0!" or len(got) != 4096:
    sys.exit(f"node2 reads {len(got)} bytes starting {got[:4]!r}")
PY
}
check "node2's truncate of a file node1's mapping dirtied ends, keeping what is left" \
    trunc_dirty "${M[1]}/tr" "${M[2]}/tr"

# write_vs_truncate A B: for 4 s node1 writes 100 bytes at random places
# of A while node2 truncates B to random sizes. A write(2) keeps its last
# partial page locked while it waits for the RW lock node2's truncate
# holds, and the truncate waits for the META lock whose flush waits for
# that page: the flush is given up on after a while, and both go on.
write_vs_truncate() {
	local end=$((SECONDS + 4)) w
	python3 - "$1" <<'PY' &
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
end = time.time() + 4
while time.time() < end:
    os.pwrite(fd, b"x" * 100, random.randrange(0, 1 << 20))
PY
	w=$!
	while ((SECONDS < end)); do
		truncate -s $((RANDOM * 16)) "$2" || return 1
	done
	wait "$w"
}
check "node1's writes and node2's truncates of one file both go on (4 s)" \
    timeout -s KILL 60 bash -c "$(declare -f write_vs_truncate); write_vs_truncate '${M[1]}/wt' '${M[2]}/wt'"

echo "-- an interrupted flock wait"
: >"${M[1]}/fl"
exec 9<"${M[1]}/fl"
check "node1 holds flock EX" flock -x -n 9
exec 8<"${M[2]}/fl"
# flock(1) -w arms a timer: its SIGALRM must end the wait (KILL after 10 s
# shows a wait that no signal ends). fd 8 stays open in this shell, so a
# request left queued would be granted to it later.
t0=$SECONDS
timeout -s KILL 10 flock -x -w 1 8
rc=$?
check_eq "node2's flock wait ends when the timer's signal interrupts it" 1 "$rc"
check "... within a few seconds" test $((SECONDS - t0)) -le 4
flock -u 9
sleep 0.5
check "once node1 unlocks, nothing of node2's is queued: node1 takes it again" \
    flock -x -n "${M[1]}/fl" true
flock -s -n 8 && flock -u 8
check "node2 locked and unlocked LOCK_SH (its lock now converts)" test $? -eq 0
flock -x -n 9
t0=$SECONDS
timeout -s KILL 10 flock -x -w 1 8
rc=$?
check_eq "an interrupted conversion ends too" 1 "$rc"
flock -u 9
sleep 0.5
check "... and leaves nothing queued" flock -x -n "${M[1]}/fl" true
check "node2's flock still works afterwards" flock -x -w 5 8
flock -u 8
exec 8<&- 9<&-

echo "-- appends from both nodes, read where one of them appends"
# append_race A B S: for S seconds one thread appends fsync'ed records to
# A (node1's view of the file), another to B (node2's), in turns; after
# each of node2's acknowledgements a fresh open on node1 reads node2's
# last record while node1's next record, just past it, is being written.
# FUSE drops the attributes of every reply that races a local write, and
# applies a write's new size only when the writing thread runs again
# (fsd/kernsize.c): node1's writer shares its CPU with a real-time
# process that runs 4 ms of every 5, so that it often waits to run while
# the reader asks for the size. Without the store of fsd/kernsize.c
# node1's kernel kept an old size and the read came short.
append_race() {
	python3 - "$@" <<'PY'
import os, subprocess, sys, threading, time
a, b, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
REC = 64
stop = time.monotonic() + secs
acked, cv = [0, 0], threading.Condition()
two_cpus = len(os.sched_getaffinity(0)) >= 2
hog = None
if two_cpus:
    hog = subprocess.Popen([sys.executable, "-c", f"""
import os, time
os.sched_setaffinity(0, {{1}})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
end = time.monotonic() + {secs}
while time.monotonic() < end:
    t = time.monotonic() + 0.004
    while time.monotonic() < t:
        pass
    time.sleep(0.001)
"""])
def writer(path, who):
    if two_cpus:
        os.sched_setaffinity(0, {1 - who})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    seq = 0
    while time.monotonic() < stop:
        with cv:	# node1 writes record k after node2's k-1, node2 after node1's k
            while time.monotonic() < stop and acked[1 - who] < seq + who:
                cv.wait(0.05)
        os.pwrite(fd, (b"%d:%d" % (who, seq)).ljust(REC, b"."), (seq * 2 + who) * REC)
        os.fsync(fd)
        seq += 1
        with cv:
            acked[who] = seq
            cv.notify_all()
    os.close(fd)
os.close(os.open(a, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
ts = [threading.Thread(target=writer, args=(p, k)) for k, p in ((0, a), (1, b))]
for t in ts:
    t.start()
if two_cpus:
    os.sched_setaffinity(0, {0})
checks = short = 0
while time.monotonic() < stop:
    with cv:
        n = acked[1]
    if n == 0:
        continue
    want = b"1:%d" % (n - 1)
    fd = os.open(a, os.O_RDONLY)
    got = os.pread(fd, REC, ((n - 1) * 2 + 1) * REC)
    os.close(fd)
    checks += 1
    short += got[:len(want)] != want
for t in ts:
    t.join()
if hog:
    hog.wait()
print(f"{checks} reads, {acked[0]} and {acked[1]} records acknowledged, {short} without node2's last")
sys.exit(1 if short or checks < 10 else 0)
PY
}
check "node1 reads every record node2 acknowledged while both append (6 s)" \
    timeout -s KILL 60 bash -c "$(declare -f append_race); append_race '${M[1]}/appends' '${M[2]}/appends' 6"

echo "-- an inode another node deleted and made again"
# reused_inode A DIR2: node1 holds a file by an O_PATH descriptor (no
# open file, so no OPEN lock keeps it); node2 (DIR2) removes it and makes
# a new file, which gets the same block; node1 then reopens its old inode
# through /proc/self/fd, reads its attributes and changes its mode. Each
# must fail with ESTALE and leave node2's new file as it was: the kernel
# names an inode by its block number only, and before fsd compared the
# generation node1's write went into node2's file.
reused_inode() {
	python3 - "$@" <<'PY'
import errno, os, stat, sys
a, dir2 = sys.argv[1], sys.argv[2]
name = os.path.basename(a)
with open(os.path.join(dir2, name), "w") as f:
    f.write("old\n")
fd = os.open(a, os.O_PATH)
ino = os.fstat(fd).st_ino
os.unlink(os.path.join(dir2, name))
for i in range(8):
    new = os.path.join(dir2, "reused%d" % i)
    with open(new, "w") as f:
        f.write("new\n")
    if os.stat(new).st_ino == ino:
        break
else:
    sys.exit("node2 never made a new file in the freed block %d" % ino)
bad = []
for what, op in (("reopen for writing", lambda: os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_APPEND)),
                 ("fstat", lambda: os.fstat(fd)),
                 ("chmod", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o600))):
    try:
        r = op()
        bad.append("%s succeeded" % what)
        if isinstance(r, int):
            os.write(r, b"written through the old inode\n")
            os.close(r)
    except OSError as e:
        if e.errno != errno.ESTALE:
            bad.append("%s: %s" % (what, e))
with open(new) as f:
    got = f.read()
if got != "new\n" or stat.S_IMODE(os.stat(new).st_mode) == 0o600:
    bad.append("node2's new file changed: %r, mode %o" % (got, stat.S_IMODE(os.stat(new).st_mode)))
print("; ".join(bad) or "every use of the old inode: ESTALE")
sys.exit(1 if bad else 0)
PY
}
check "node1's old inode is stale once node2 made a new one in its block" \
    timeout -s KILL 60 bash -c "$(declare -f reused_inode); reused_inode '${M[1]}/reused' '${M[2]}'"

echo "-- files open on node1 while node2 unlinks them"
# open_unlinked A B N: node1 (A) opens each of N files again and again,
# each open right after the close before it, and keeps the last one; node2
# (B) then unlinks them all. Its deletion waits for node1's last close:
# the OPEN lock node1 holds at PR makes node2's EX trylock fail. FUSE
# sends the close's RELEASE after close(2) has returned, so the next open
# often reaches fsd while the last close's downconvert to NL is in flight,
# and was granted at the level about to go: node2's trylock then got EX
# and deleted the open files.
open_unlinked() {
	python3 - "$@" <<'PY'
import os, sys, time
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(a, exist_ok=True)
def data(i):
    return (b"file %d\n" % i) * 512
fds = []
for i in range(n):
    p = os.path.join(a, "f%d" % i)
    with open(p, "wb") as f:
        f.write(data(i))
    fd = os.open(p, os.O_RDONLY)
    for _ in range(20):
        os.close(fd)
        fd = os.open(p, os.O_RDONLY)
    fds.append(fd)
for i in range(n):
    os.unlink(os.path.join(b, "f%d" % i))
time.sleep(1)
bad = [i for i, fd in enumerate(fds) if os.pread(fd, 1 << 16, 0) != data(i)]
for fd in fds:
    os.close(fd)
print("%d of %d open files lost their contents" % (len(bad), n))
sys.exit(1 if bad else 0)
PY
}
check "files node1 keeps open keep their contents when node2 unlinks them" \
    timeout -s KILL 120 bash -c "$(declare -f open_unlinked); open_unlinked '${M[1]}/openun' '${M[2]}/openun' 100"

echo "-- a slot recovered twice by the same survivor"
# node1 recovers node2's slot, node2 comes back to that slot, takes a new
# local alloc window and logs freed clusters, and its journal is
# checkpointed (node1 reads its file: the META lock comes down from EX),
# so that neither block is in the log when node2 dies again. node1 must
# read them from the disk, not as its first recovery left them: the
# window goes back to the global bitmap and the log's clusters are freed
# (seen on the disk once node1 has unmounted).
slot_of() { lc exec "$1" "$O2CTL" mounts --json | jq '.[0].slot'; }
recovered() { grep -c "slot $1 recovered" "$LOCALCLUSTER_DIR/node1/log/fsd.log"; }
recovered_since() { (($(recovered "$1") > $2)); }
replayed() { grep -c "journal:000$1: replayed" "$LOCALCLUSTER_DIR/node1/log/fsd.log"; }
la_total() { debugfs.ocfs2 -R "stat //local_alloc:000$1" "$IMG" 2>/dev/null | sed -n 's/.*Bitmap Total: \([0-9]*\).*/\1/p'; }
tl_used() { debugfs.ocfs2 -R "stat //truncate_log:000$1" "$IMG" 2>/dev/null | sed -n 's/.*Total Records: [0-9]*   Used: \([0-9]*\).*/\1/p'; }
# dirty_slot K: node K takes a window and frees clusters into its log,
# then node1 makes it checkpoint its journal.
dirty_slot() {
	head -c 1048576 /dev/urandom >"${M[$1]}/w$1" && sync "${M[$1]}/w$1" &&
	    truncate -s 4096 "${M[$1]}/w$1" && sync "${M[$1]}/w$1" && cat "${M[1]}/w$1" >/dev/null
}
S2=$(slot_of 2)
for round in 1 2; do
	run_check "round $round: node2 takes a window and logs freed clusters" dirty_slot 2
	check "... the window is on disk" test "$(la_total "$S2")" -gt 0
	before=$(recovered "$S2")
	replays=$(replayed "$S2")
	lc kill 2 >/dev/null
	check "node1 recovers node2's slot" wait_for 20 recovered_since "$S2" "$before"
	check_eq "... replaying its journal (node2 mounted it: dirty)" $((replays + 1)) "$(replayed "$S2")"
	if ((round == 1)); then
		lc start 2 >/dev/null
		run_check "node2 mounts again" node_mount 2
		check_eq "... on the same slot" "$S2" "$(slot_of 2)"
	fi
done

echo "-- end"
check "node1 unmounts" lc umount 1
check_eq "node2's window went back to the global bitmap" 0 "$(la_total "$S2")"
check_eq "... and its truncate log is empty" 0 "$(tl_used "$S2")"
# fsck wants no heartbeat on the volume: node2's daemons came back after
# the kill, so mount there and leave cleanly
lc start 2 >/dev/null
run_check "node2 mounts once more" node_mount 2
check "node2 unmounts" lc umount 2
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"
finish
