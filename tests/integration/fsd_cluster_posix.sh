#!/usr/bin/env bash
# POSIX across the nodes of a local cluster: open(O_TRUNC) on one node
# truncates and stamps mtime and ctime for all; open(O_CREAT) without
# O_EXCL of one new name on several nodes at once opens what another node
# made meanwhile (never EEXIST), and with that node's permissions; two
# nodes moving directories across each other (one between a directory
# and its parent, one in the parent) never deadlock; an
# orphan of every kind of inode (fast and slow symlinks, fifos, sockets,
# devices, files, directories) is deleted by the recovery of its dead
# node and by another node's orphan scan, without an error. fsck.ocfs2
# finds the volume clean at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 3 fsd' EXIT

M=()
fsdlog() { lc log "$1" fsd; }
mounts_json() { lc exec "$1" "$O2CTL" mounts --json; }
orphans_deleted() { mounts_json "$1" | jq '.[0].orphans_deleted'; }
LONG=$(printf 'p%.0s' $(seq 1 2000))/$(printf 'q%.0s' $(seq 1 1000))
KINDS="small big dir fastlink slowlink fifo sock chr blk"

# make_kinds DIR: one inode of each kind in DIR (named as in KINDS).
make_kinds() {
	mkdir -p "$1" &&
	printf small >"$1/small" &&
	head -c 300000 /dev/urandom >"$1/big" &&
	mkdir "$1/dir" &&
	ln -s small "$1/fastlink" &&
	ln -s "$LONG" "$1/slowlink" &&
	mkfifo "$1/fifo" &&
	python3 -c 'import os, stat, sys; os.mknod(sys.argv[1], stat.S_IFSOCK | 0o644)' "$1/sock" &&
	mknod "$1/chr" c 1 3 &&
	mknod "$1/blk" b 7 0
}
remove_kinds() {
	local k
	for k in $KINDS; do
		if [[ $k == dir ]]; then rmdir "$1/$k"; else rm "$1/$k"; fi || return 1
	done
}
# hold DIR MODE: keep each kind in DIR known to this kernel until killed:
# MODE path holds everything with O_PATH (no OPEN lock); MODE open opens
# the regular files.
hold() {
	python3 - "$@" $KINDS >"$FSD_DIR/hold.out" <<'EOF' &
import os, sys, time
for k in sys.argv[3:]:
	p = os.path.join(sys.argv[1], k)
	reg = os.path.isfile(p) and not os.path.islink(p)
	os.open(p, os.O_RDONLY if reg and sys.argv[2] == "open" else os.O_PATH | os.O_NOFOLLOW)
print("holding", flush=True)
time.sleep(600)
EOF
	HOLDER=$!
	BG+=($!)
	wait_for 10 grep -q holding "$FSD_DIR/hold.out"
}
fsync_in() { python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT))' "$1/sync"; }
# sane K...: each node's fsd alive and writable, no failure in its log.
sane() {
	local k
	for k in "$@"; do
		if fsdlog "$k" | grep -E 'corrupt|deleting orphan|Input/output'; then return 1; fi
		: >"${M[$k]}/probe$k" && rm "${M[$k]}/probe$k" || return 1
	done
}

echo "-- setup"
if ! netd_up 3; then fail "localcluster up 3"; finish; exit 1; fi
for k in 1 2 3; do run_check "node$k mounts the volume" node_mount "$k"; done
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
check "every node sees the others' heartbeat and links" wait_for 20 mesh_up 3

echo "-- open(O_TRUNC) on one node, seen on all"
# trunc_seen K HOW...: HOW on node K cuts f (5 bytes, mtime in 2001) to 0
# bytes with a new mtime and ctime, as every node sees
trunc_seen() {
	local k=$1 n before
	shift
	echo test >"${M[1]}/f" && touch -d 2001-01-01 "${M[1]}/f" || return 1
	before=$(stat -c %z "${M[1]}/f")
	sleep 0.05
	"$@" "${M[$k]}/f" || return 1
	for n in 1 2 3; do
		read -r size mtime ctime < <(stat -c '%s %Y %z' "${M[$n]}/f")
		echo "node$n: size $size, mtime $mtime, ctime $ctime (was $before)"
		[[ $size == 0 ]] && ((mtime > 978307200)) && [[ $ctime != "$before" ]] || return 1
	done
}
shell_trunc() { : >"$1"; }
open_trunc() { python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC))' "$1"; }
check "': > f' on node2" trunc_seen 2 shell_trunc
check "open(O_WRONLY|O_TRUNC) on node3" trunc_seen 3 open_trunc

echo "-- open(O_CREAT) of one new name on three nodes at once"
# race ROUNDS: each round, one process per node opens the same new file
# with O_CREAT|O_APPEND (node3's as nobody, without write permission on
# root's files) and appends its line. Every open succeeds but nobody's on
# a file root made first, which must fail with EACCES; the file holds the
# line of every open that succeeded.
mkdir "${M[1]}/race" && chmod 1777 "${M[1]}/race"
race() {
	python3 - "$1" "${M[1]}/race" "${M[2]}/race" "${M[3]}/race" <<'EOF'
import multiprocessing as mp, os, sys

NOBODY = 65534

def opener(k, d, i, barrier, q):
	if k == 3:
		os.setgid(NOBODY)
		os.setuid(NOBODY)
	barrier.wait()
	p = os.path.join(d, "f%d" % i)
	try:
		fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
	except OSError as e:
		q.put((k, e.errno))
		return
	os.write(fd, b"node%d\n" % k)
	os.close(fd)
	q.put((k, 0))

bad = 0
for i in range(int(sys.argv[1])):
	barrier, q = mp.Barrier(3), mp.Queue()
	ps = [mp.Process(target=opener, args=(k, sys.argv[1 + k], i, barrier, q)) for k in (1, 2, 3)]
	for p in ps: p.start()
	for p in ps: p.join()
	res = dict(q.get() for _ in ps)
	st = os.stat(os.path.join(sys.argv[2], "f%d" % i))
	lines = sorted(open(os.path.join(sys.argv[2], "f%d" % i)).read().split())
	want = sorted("node%d" % k for k, e in res.items() if e == 0)
	ok = res[1] == 0 and res[2] == 0 and lines == want and \
	    (res[3] == 0 if st.st_uid == NOBODY else res[3] == 13)
	if not ok:
		bad += 1
		print("round %d: errnos %s, owner %d, lines %s" % (i, res, st.st_uid, lines))
print("%d of %s rounds wrong" % (bad, sys.argv[1]))
sys.exit(bad != 0)
EOF
}
check "40 rounds: no EEXIST, permissions kept, no line lost" race 40

echo "-- a directory open on one node, removed on another"
# node1 reads it again after node2's rmdir: nothing, not ESTALE (its
# deletion waits for node1's close, as a file's does)
open_rmdir() {
	mkdir "${M[1]}/od" && python3 - "${M[1]}/od" "${M[2]}/od" <<'EOF2'
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)
os.rmdir(sys.argv[2])
time.sleep(0.5)		# node2's kernel forgets it: node2 would delete it now
os.listdir(fd)
os.close(fd)
EOF2
}
check "node1 lists it after node2 removed it" open_rmdir
check "without harm" sane 1 2

echo "-- an inode one node deleted and another made again in its block"
# node2 deletes node1's file, so node2 keeps the inode's lock; node1's
# next directory takes the same block (the first free bit of its
# allocator): node2 must see the new directory, not the file it deleted.
reuse() {
	local i
	mkdir -p "${M[1]}/reuse"
	for i in $(seq 1 "$1"); do
		echo "$i" >"${M[1]}/reuse/f" && rm "${M[2]}/reuse/f" || return 1
		sleep 0.3	# node2's kernel forgets it, and node2 deletes it
		mkdir "${M[1]}/reuse/g" || return 1
		if [[ $(stat -c '%F %h' "${M[2]}/reuse/g") != "directory 2" ]]; then
			echo "round $i: node2 sees $(stat -c '%F with %h links' "${M[2]}/reuse/g" 2>&1)"
			return 1
		fi
		rmdir "${M[1]}/reuse/g" || return 1
	done
	rmdir "${M[1]}/reuse"
}
check "10 rounds: node2 sees each new directory" reuse 10

echo "-- two nodes move directories across each other"
# node1 moves d/a/x up to d/y and back (a move between d/a and d, which
# locks both), node2 renames d/a to d/b and back (in d: d, then a): a
# node that locked the child first waited for the other for ever.
# flip A B N: rename A to B and back N times; ENOENT (the other node
# moved the parent meanwhile) is the only error a race explains.
flip() {
	python3 - "$@" <<'EOF2'
import errno, os, sys
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
	for s, d in ((a, b), (b, a)):
		try:
			os.rename(s, d)
		except OSError as e:
			if e.errno != errno.ENOENT:
				sys.exit("rename %s %s: %s" % (s, d, e))
EOF2
}
mkdir -p "${M[1]}/d/a/x"
flip "${M[1]}/d/a/x" "${M[1]}/d/y" 200 >"$FSD_DIR/flip1.out" 2>&1 &
f1=$!
flip "${M[2]}/d/a" "${M[2]}/d/b" 200 >"$FSD_DIR/flip2.out" 2>&1 &
f2=$!
BG+=("$f1" "$f2")
gone() { ! kill -0 "$f1" 2>/dev/null && ! kill -0 "$f2" 2>/dev/null; }
if wait_for 60 gone; then
	pass "200 rounds each end (no deadlock)"
else
	fail "200 rounds each end (no deadlock)"
	finish
	exit 1
fi
run_check "node1's moves give no other error" wait "$f1"
run_check "node2's renames give no other error" wait "$f2"
BG=()
sed 's/^/       | /' "$FSD_DIR"/flip[12].out
both_there() { [[ -d ${M[3]}/d/a || -d ${M[3]}/d/b ]] && [[ -d ${M[3]}/d/y || -d ${M[3]}/d/a/x || -d ${M[3]}/d/b/x ]]; }
check "node3 finds both directories" both_there
check "node3 removes them" rm -r "${M[3]}/d"
check "without harm" sane 1 2 3

echo "-- the dead node's orphans of every kind: its recovery deletes them"
check "node3 makes one of each kind" make_kinds "${M[3]}/dead"
hold "${M[3]}/dead" open
check "node3 unlinks them, still held" remove_kinds "${M[3]}/dead"
check "node3 fsyncs (the unlinks are in its journal)" fsync_in "${M[3]}"
lc kill 3 >/dev/null
bg_stop_all
check "a survivor recovers node3's slot" wait_for 30 sh -c \
    "cat '$LOCALCLUSTER_DIR'/node[12]/log/fsd.log | grep -q 'slot 2 recovered'"
check "and deletes its orphans" wait_for 10 sh -c "cat '$LOCALCLUSTER_DIR'/node[12]/log/fsd.log | grep -q 'orphan_dir:0002: 9 inodes deleted'"
check "without harm" sane 1 2
lc umount 3 >/dev/null 2>&1
lc start 3 >/dev/null
run_check "node3 mounts again" node_mount 3

echo "-- orphans of every kind that node1 still knows: node2's orphan scan deletes them"
check "node2 unmounts" lc umount 2
run_check "node2 mounts with a short orphan scan interval" node_mount 2 -o orphan_scan=2
scans0=$(orphans_deleted 2)
check "node1 makes one of each kind" make_kinds "${M[1]}/scan"
hold "${M[1]}/scan" path
check "node1 unlinks them, still known" remove_kinds "${M[1]}/scan"
scanned() { (($(orphans_deleted 2) >= scans0 + 9)); }
check "node2's orphan scan deletes them" wait_for 20 scanned
check "without harm" sane 1 2 3
bg_stop_all
forget() { sync; echo 2 >/proc/sys/vm/drop_caches; sleep 0.5; }
forget
check "node1's kernel forgets them without harm" sane 1 2 3

echo "-- the end"
for k in 1 2 3; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"

finish
