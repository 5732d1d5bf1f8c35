#!/usr/bin/env bash
# One volume mounted by fsd on three nodes of the local cluster: what one
# node does, the others see at once; concurrent appends, creates,
# unlinks and renames lose nothing; a file unlinked while open elsewhere
# lives until its last close, then its space comes back exactly once; a
# node killed mid-work is recovered by the survivors with its fsync'ed
# data intact, also when a second node dies while the survivors recover
# the first. fsck.ocfs2 finds the volume clean at the end. o2ctl mounts
# shows each node's node number and slot, and the survivors' count of
# recovered slots goes up with a recovery.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 3 fsd' EXIT

M=()
# A short orphan scan interval: the test waits for one scan.
mnt() { node_mount "$1" -o orphan_scan=2; }
free_clusters() { stat -f -c %a "${M[1]}"; }
# fsynced FILE LINE N: FILE holds LINE N times, made durable with fsync.
fsynced() {
	python3 - "$@" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, (sys.argv[2] + "\n").encode() * int(sys.argv[3]))
os.fsync(fd)
os.close(fd)
EOF
}
fsdlog() { lc log "$1" fsd; }
mounts_json() { lc exec "$1" "$O2CTL" mounts --json; }
# mounts_shown K: node K's only mount is ours, with its node number and a slot.
mounts_shown() {
	local num
	num=$(lc exec "$1" "$O2CTL" --json status | jq -e '.nodes[] | select(.local) | .num') || return 1
	mounts_json "$1" | jq -e --argjson n "$num" --arg m "${M[$1]}" '
		length == 1 and .[0].state == "mounted" and .[0].cluster and
		.[0].node == $n and .[0].mountpoint == $m and .[0].slot >= 0'
}
# The slots recovered by node1's and node2's fsd, summed.
recoveries() {
	{ mounts_json 1; mounts_json 2; } | jq -s 'map(.[0].recoveries) | add'
}
recoveries_above() { (($(recoveries) > $1)); }
orphans_counted() {
	(($({ mounts_json 1; mounts_json 2; } | jq -s 'map(.[0].orphans_deleted) | add') >= 1))
}
lvb_stats() { mounts_json "$1" | jq '.[0].attrs_from_lvb'; }
lvb_stats_above() { (($(lvb_stats "$1") > $2)); }
mount_stale() { mounts_json "$1" | jq -e 'length == 1 and .[0].state == "stale"'; }
status_lists_mount() { lc exec "$1" "$O2CTL" --json status | jq -e '.mounts | length == 1'; }

echo "-- setup"
if ! netd_up 3; then fail "localcluster up 3"; finish; exit 1; fi
for k in 1 2 3; do run_check "node$k mounts the volume" mnt "$k"; done
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
check "every node sees the others' heartbeat and links" wait_for 20 mesh_up 3
check "three slots are taken" sh -c "debugfs.ocfs2 -R slotmap '$IMG' 2>/dev/null | grep -cE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+' | grep -qx 3"
for k in 1 2 3; do run_check "node$k: o2ctl mounts shows its node number and slot" mounts_shown "$k"; done
check_eq "three different slots" 3 "$(for k in 1 2 3; do mounts_json "$k" | jq '.[0].slot'; done | sort -u | wc -l)"
check "o2ctl status --json lists the mount" status_lists_mount 1

check "mkfs a volume of another cluster" mkfs_img "$FSD_DIR/other.img" --fs-feature-level=max-compat \
    --cluster-stack=o2cb --cluster-name=other -N 2
mkdir -p "$FSD_DIR/m"
expect_error "another cluster's volume is refused" 'belongs to cluster "other"' \
    lc exec 1 "$FSD" "$FSD_DIR/other.img" "$FSD_DIR/m"

echo "-- what one node does, the others see at once"
echo hello >"${M[1]}/a"
check_eq "node2 reads what node1 wrote" hello "$(cat "${M[2]}/a")"
echo world >>"${M[2]}/a"
check_eq "node3 reads node2's append" "$(printf 'hello\nworld')" "$(cat "${M[3]}/a")"
truncate -s 3 "${M[3]}/a"
check_eq "node1 sees node3's truncate" hel "$(cat "${M[1]}/a")"
chmod 640 "${M[1]}/a"
check_eq "node2 sees node1's chmod" 640 "$(stat -c %a "${M[2]}/a")"
mkdir "${M[2]}/d"
mv "${M[1]}/a" "${M[1]}/d/b"
check "node3 sees the rename" sh -c "test ! -e '${M[3]}/a' && test -f '${M[3]}/d/b'"
rm "${M[3]}/d/b"
check "node1 sees the unlink" test ! -e "${M[1]}/d/b"
check "node2 sees the unlink" test ! -e "${M[2]}/d/b"
touch -d @1000000000.5 "${M[2]}/t"
check_eq "node1 sees node2's utimens" 1000000000 "$(stat -c %Y "${M[1]}/t")"
# node1's last change leaves its value block in the META lock: node2's
# fstat (no lookup: GETATTR alone), granted the lock afresh, is answered
# from it without a read.
head -c 12345 /dev/zero >"${M[1]}/lv"
exec 7<"${M[2]}/lv"
chmod 604 "${M[1]}/lv"
truncate -s 23456 "${M[1]}/lv"
touch -d @1200000000.25 "${M[1]}/lv"
lvb0=$(lvb_stats 2)
st2=$(stat -L -c '%s %a %h %b %u %g %x %y %z' /proc/$$/fd/7)
exec 7<&-
check_eq "node2's fstat of node1's file is node1's stat" \
    "$(stat -c '%s %a %h %b %u %g %x %y %z' "${M[1]}/lv")" "$st2"
check "... and came from the lock's value block" lvb_stats_above 2 "$lvb0"
python3 - "${M[1]}/mm" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
m[4096:4101] = b"mmap!"
m.flush()
m.close()
os.close(fd)
EOF
check_eq "node2 reads node1's mmap write" "mmap!" "$(dd if="${M[2]}/mm" bs=1 skip=4096 count=5 status=none)"
dd if=/dev/urandom of="$FSD_DIR/blk" bs=4096 count=4 status=none
dd if="$FSD_DIR/blk" of="${M[2]}/direct" bs=4096 oflag=direct status=none
check "node3 reads node2's O_DIRECT write with O_DIRECT" \
    sh -c "dd if='${M[3]}/direct' bs=4096 iflag=direct status=none | cmp -s - '$FSD_DIR/blk'"
check_eq "node3 reads node2's mmap view" "mmap!" "$(python3 -c "
import mmap, sys
f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print(m[4096:4101].decode())" "${M[3]}/mm")"
echo again >"${M[3]}/mm2"
python3 -c "
import mmap, sys
f = open(sys.argv[1], 'r+b'); m = mmap.mmap(f.fileno(), 0)
m[0:5] = b'AGAIN'; m.flush()" "${M[3]}/mm2"
check_eq "node1 sees node3's mmap rewrite" AGAIN "$(head -c 5 "${M[1]}/mm2")"
# fsx in a cluster mount (its own page cache rules), then read elsewhere.
check "fsx on node1: 1500 random operations match the model" \
    "$BUILD/progs/fsx" -N 1500 -S 7 -l 1M -m "$FSD_DIR/fsx.model" "${M[1]}/fsx"
check "node2 reads fsx's file as the model has it" cmp "${M[2]}/fsx" "$FSD_DIR/fsx.model"
check "node3 too" cmp "${M[3]}/fsx" "$FSD_DIR/fsx.model"

echo "-- the RW lock: PR around each write, EX around a truncate"
# rw_mode K FILE: the mode node K's dlmd grants it on FILE's RW lock
# (W + 6 pad + blkno + generation, in hex).
rw_mode() {
	local uuid num name
	uuid=$(mounts_json "$1" | jq -r '.[0].uuid')
	num=$(mounts_json "$1" | jq -r '.[0].node')
	name=$(printf 'W000000%016x' "$(stat -c %i "$2")")
	lc exec "$1" "$O2CTL" --json locks "$uuid" | jq -r --arg n "$name" --argjson k "$num" \
	    '[.resources[] | select(.name | startswith($n)) | .granted[]? | select(.node == $k) | .mode] | first // "none"'
}
echo one >"${M[1]}/rw"
check_eq "node1's write holds the file's RW lock PR, cached" PR "$(rw_mode 1 "${M[1]}/rw")"
echo two >>"${M[2]}/rw"
check_eq "node2's append shares it" PR "$(rw_mode 2 "${M[2]}/rw")"
check_eq "node1 keeps its PR meanwhile" PR "$(rw_mode 1 "${M[1]}/rw")"
truncate -s 6 "${M[3]}/rw"
check_eq "node3's truncate takes it EX" EX "$(rw_mode 3 "${M[3]}/rw")"
check_eq "node1 came down to NL for that" NL "$(rw_mode 1 "${M[1]}/rw")"
check_eq "the truncate's result everywhere" "$(printf 'one\ntw')" "$(cat "${M[1]}/rw")"

echo "-- three nodes append to one file with O_APPEND"
: >"${M[1]}/log"
for k in 1 2 3; do
	python3 - "${M[$k]}/log" "$k" <<'EOF' &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
for i in range(300):
	os.write(fd, b"node%s record %04d ................................\n" % (sys.argv[2].encode(), i))
os.close(fd)
EOF
	BG+=($!)
done
for p in "${BG[@]}"; do wait "$p"; done
BG=()
check_eq "900 records, none lost" 900 "$(wc -l <"${M[2]}/log")"
check_eq "none torn" 900 "$(grep -cE '^node[123] record [0-9]{4} \.{32}$' "${M[3]}/log")"
check_eq "every record once" 900 "$(sort -u "${M[1]}/log" | wc -l)"

echo "-- creating and unlinking in one shared directory"
mkdir "${M[1]}/shared"
for k in 1 2 3; do
	(for i in $(seq 1 400); do : >"${M[$k]}/shared/n$k-$i"; done
	 for i in $(seq 1 400 | awk 'NR % 2'); do rm "${M[$k]}/shared/n$k-$i"; done) &
	BG+=($!)
done
for p in "${BG[@]}"; do wait "$p"; done
BG=()
for k in 1 2 3; do
	check_eq "node$k lists 600 entries" 600 "$(ls "${M[$k]}/shared" | wc -l)"
done
check_eq "no duplicate names" 600 "$(ls "${M[2]}/shared" | sort -u | wc -l)"

echo "-- renaming across directories concurrently"
mkdir "${M[1]}/ra" "${M[1]}/rb"
for i in $(seq 1 300); do : >"${M[1]}/ra/f$i"; done
for k in 1 2 3; do
	(for i in $(seq "$k" 3 300); do mv "${M[$k]}/ra/f$i" "${M[$k]}/rb/f$i"; done) &
	BG+=($!)
done
for p in "${BG[@]}"; do wait "$p"; done
BG=()
check_eq "ra is empty" 0 "$(ls "${M[2]}/ra" | wc -l)"
check_eq "rb holds all 300, once each" 300 "$(ls "${M[3]}/rb" | sort -u | wc -l)"
# Opposite directions at once (each takes both directories' locks), and
# directories moving into each other's trees.
mkdir -p "${M[1]}/ra/da/sub" "${M[1]}/rb/db/sub"
for i in $(seq 1 150); do : >"${M[1]}/ra/g$i"; done
(for i in $(seq 1 150); do mv "${M[1]}/rb/f$i" "${M[1]}/ra/f$i"; done) &
BG+=($!)
(for i in $(seq 1 150); do mv "${M[2]}/ra/g$i" "${M[2]}/rb/g$i"; done) &
BG+=($!)
(for i in $(seq 1 20); do
	mv "${M[3]}/ra/da" "${M[3]}/rb/db/sub/da" && mv "${M[3]}/rb/db/sub/da" "${M[3]}/ra/da"
	mv "${M[3]}/rb/db" "${M[3]}/ra/da/sub/db" 2>/dev/null && mv "${M[3]}/ra/da/sub/db" "${M[3]}/rb/db"
done) &
BG+=($!)
for p in "${BG[@]}"; do wait "$p"; done
BG=()
check_eq "moved both ways: ra holds f1-f150 and da" 151 "$(ls "${M[3]}/ra" | grep -cE '^(f([1-9]|[1-9][0-9]|1[0-4][0-9]|150)|da)$')"
check_eq "rb holds f151-f300, g1-g150 and db" 301 "$(ls "${M[2]}/rb" | sort -u | wc -l)"
expect_error "a directory cannot move into its own subtree" "Invalid argument" \
    python3 -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "${M[2]}/ra/da" "${M[2]}/ra/da/sub/x"

echo "-- flock(2) across nodes"
echo 0 >"${M[1]}/counter"
: >"${M[1]}/lockfile"
flock "${M[1]}/lockfile" sh -c "echo held >'$FSD_DIR/held'; sleep 2" &
BG+=($!)
wait_for 10 test -s "$FSD_DIR/held"
rc=0; flock -n "${M[2]}/lockfile" true || rc=$?
check_eq "node2's LOCK_NB fails while node1 holds the lock" 1 "$rc"
rc=0; flock -s -n "${M[3]}/lockfile" true || rc=$?
check_eq "so does node3's shared LOCK_NB" 1 "$rc"
check "node2's blocking flock gets it once node1 lets go" flock -w 20 "${M[2]}/lockfile" true
for p in "${BG[@]}"; do wait "$p"; done
BG=()
for k in 1 2 3; do
	(for i in $(seq 1 40); do
		flock "${M[$k]}/lockfile" sh -c "n=\$(cat '${M[$k]}/counter'); echo \$((n + 1)) >'${M[$k]}/counter'"
	done) &
	BG+=($!)
done
for p in "${BG[@]}"; do wait "$p"; done
BG=()
check_eq "a counter incremented under flock by three nodes counts every step" 120 "$(cat "${M[2]}/counter")"

echo "-- fcntl (POSIX) locks across nodes"
PLOCK=$BUILD/progs/plock
P=()
for k in 1 2 3; do P[k]=${M[$k]}/records; done
# hold K TAG ARGS...: node K's plock keeps ARGS' lock until $FSD_DIR/TAG.go exists.
hold() {
	local k=$1 tag=$2
	shift 2
	"$PLOCK" "${P[k]}" "$@" -h "$FSD_DIR/$tag.go" >"$FSD_DIR/$tag.out" 2>&1 &
	BG+=($!)
	wait_for 10 grep -q locked "$FSD_DIR/$tag.out"
}
# busy K ARGS...: node K's F_SETLK is refused (exit 1: EAGAIN).
busy() { local k=$1 rc=0; shift; "$PLOCK" "${P[k]}" set "$@" 2>/dev/null || rc=$?; ((rc == 1)); }
# release_all: every holder lets go (its TAG.go appears) and exits.
release_all() {
	local o p
	for o in "$FSD_DIR"/*.out; do touch "${o%.out}.go"; done
	for p in "${BG[@]}"; do wait "$p"; done
	BG=()
	rm -f "$FSD_DIR"/*.go "$FSD_DIR"/*.out
}
run_check "node1 write-locks bytes 0-99" hold 1 a set w 0 100
check "node2's F_SETLK on bytes 50-59 gets EAGAIN" busy 2 w 50 10
check "so does node3's read lock on byte 99" busy 3 r 99 1
check "a second process on node1 is refused too" busy 1 w 0 1
check "node2 write-locks bytes 100-199 beside it" "$PLOCK" "${P[2]}" set w 100 100
check_eq "node3's F_GETLK names node1's lock (pid 0: not a process here)" "w 0 100 0" \
    "$("$PLOCK" "${P[3]}" get w 10 1)"
"$PLOCK" "${P[2]}" wait w 0 10 >"$FSD_DIR/w.out" 2>&1 &
waiter=$!
sleep 1
check "node2's F_SETLKW waits while node1 holds the range" kill -0 "$waiter"
touch "$FSD_DIR/a.go"
check "node1's close lets node2's F_SETLKW through" wait_for 10 sh -c "! kill -0 $waiter"
check "... which got the lock" wait "$waiter"
release_all
run_check "node1 read-locks bytes 0-99" hold 1 r1 set r 0 100
run_check "node3 read-locks them too" hold 3 r3 set r 0 100
check "node2 cannot write-lock them" busy 2 w 0 100
release_all
run_check "node1 locks 0-99 and unlocks 40-59" hold 1 s set w 0 100 -u 40 20
check "node2 locks 45-54 in the hole" "$PLOCK" "${P[2]}" set w 45 10
check "but not 30-39" busy 2 w 30 10
check "nor 60-69" busy 2 w 60 10
release_all
check "node3 locks the whole file once node1 is gone" "$PLOCK" "${P[3]}" set w 0 0
echo 0 >"${M[1]}/plock-counter"
for k in 1 2 3; do
	"$PLOCK" "${M[$k]}/plock-counter" count 40 &
	BG+=($!)
done
rc=0
for p in "${BG[@]}"; do wait "$p" || rc=$?; done
BG=()
check_eq "three nodes counting under fcntl locks: every plock ends well" 0 "$rc"
check_eq "... and the counter has every step" 120 "$(cat "${M[2]}/plock-counter")"

echo "-- unlinked on one node while open on another"
sync
before=$(free_clusters)
dd if=/dev/zero of="${M[1]}/big" bs=1M count=16 status=none
exec 7<>"${M[2]}/big"
# The global bitmap counts node1's local alloc window as used: how much
# of the file it shows depends on the window, so compare with after.
written=$(free_clusters)
rm "${M[1]}/big"
check "gone from node1's view" test ! -e "${M[1]}/big"
check "node3 does not see it either" test ! -e "${M[3]}/big"
check_eq "node2 still reads it" 16777216 "$(wc -c <&7)"
check "node2 still writes it" sh -c "echo tail >&7"
sleep 1
# Clusters of other files may come back meanwhile (a truncate log flushed),
# not the 16 MiB (4096 blocks) of this one.
not_freed() { echo "free blocks: $written after the write, $(free_clusters) now"; (($(free_clusters) < written + 2048)); }
check "its space is not freed while node2 has it open" not_freed
exec 7>&-
check "closing it on node2 frees its space" wait_for 10 sh -c "test \$(stat -f -c %a '${M[1]}') -ge $((before - 8))"
check "its orphan is gone from every orphan dir" sh -c \
    "! debugfs.ocfs2 -R 'ls -l //orphan_dir:0000' '$IMG' 2>/dev/null | grep -q '[0-9a-f]\{16\}' &&
     ! debugfs.ocfs2 -R 'ls -l //orphan_dir:0001' '$IMG' 2>/dev/null | grep -q '[0-9a-f]\{16\}' &&
     ! debugfs.ocfs2 -R 'ls -l //orphan_dir:0002' '$IMG' 2>/dev/null | grep -q '[0-9a-f]\{16\}'"

echo "-- a node killed in the middle of metadata work"
mkdir "${M[3]}/work"
fsynced "${M[3]}/durable" "fsync'ed before the crash" 100
# Open on node3 when it dies, unlinked by node1: only an orphan scan of
# node1's orphan dir can find that nobody has it open any more.
scans_deleted() { cat "$LOCALCLUSTER_DIR"/node[123]/log/fsd.log | grep -c 'orphan scan: 1 orphans deleted'; }
scans_above() { (($(scans_deleted) > $1)); }
# A scan may have beaten an earlier section's last close to its orphan: count from here.
scans0=$(scans_deleted)
dd if=/dev/zero of="${M[1]}/held" bs=1M count=8 status=none
exec 8<"${M[3]}/held"
rm "${M[1]}/held"
sleep 3
check_eq "orphan scans leave it alone while node3 has it open" "$scans0" "$(scans_deleted)"
check_eq "node3 reads it whole" 8388608 "$(wc -c <&8)"
run_check "node3 write-locks the records file (fcntl)" hold 3 k set w 0 0
check "node1 cannot have it" busy 1 w 0 1
(i=0; while :; do i=$((i + 1)); mkdir "${M[3]}/work/d$i" || break; : >"${M[3]}/work/d$i/f" || break; done) 2>/dev/null &
BG+=($!)
sleep 1
recovered_before=$(recoveries)
lc kill 3 >/dev/null
exec 8<&-
bg_stop_all
check "node3's killed fsd left a stale socket" mount_stale 3
t0=$(date +%s%N)
check "node1 writes into the dead node's directory" wait_for 30 sh -c ": >'${M[1]}/work/after'"
t1=$(date +%s%N)
echo "  first write into the dead node's directory after $(((t1 - t0) / 1000000)) ms"
check "a survivor recovered the dead node's slot" wait_for 10 sh -c "cat '$LOCALCLUSTER_DIR'/node[12]/log/fsd.log | grep -q 'slot 2 recovered'"
check "o2ctl mounts: the survivors' count of recovered slots went up" \
    wait_for 5 recoveries_above "$recovered_before"
check_eq "node3's fsync'ed data survives" 2600 "$(wc -c <"${M[2]}/durable")"
check "node2 lists the dead node's directories" ls "${M[2]}/work"
check "node2 creates files after the recovery" sh -c "for i in 1 2 3 4 5; do : >\"${M[2]}/work/n\$i\" || exit 1; done"
check "node1 takes the fcntl lock node3 held when it died" "$PLOCK" "${P[1]}" set w 0 0
rm -f "$FSD_DIR"/*.out

check "an orphan scan deletes the file node3 had open" wait_for 20 scans_above "$scans0"
check_eq "... once" $((scans0 + 1)) "$(scans_deleted)"
check "o2ctl mounts counts the orphan that scan deleted" orphans_counted

echo "-- the killed node comes back"
lc umount 3 >/dev/null 2>&1
lc start 3 >/dev/null
run_check "node3 mounts again" mnt 3
check "node3 sees what the others did meanwhile" test -e "${M[3]}/work/n5"

echo "-- a node killed while the survivors recover another"
fsynced "${M[2]}/durable2" "node2 fsync'ed this" 50
(i=0; while :; do i=$((i + 1)); : >"${M[2]}/work/m$i" || break; done) 2>/dev/null &
BG+=($!)
(i=0; while :; do i=$((i + 1)); : >"${M[3]}/work/k$i" || break; done) 2>/dev/null &
BG+=($!)
sleep 0.5
lc kill 3 >/dev/null
wait_for 10 sh -c "grep -q 'node 3 died' '$LOCALCLUSTER_DIR/node2/log/fsd.log'"
lc kill 2 >/dev/null
bg_stop_all
check "node1 recovers both slots" wait_for 30 sh -c \
    "grep -q 'slot 1 recovered' '$LOCALCLUSTER_DIR/node1/log/fsd.log' &&
     (grep -q 'slot 2 recovered' '$LOCALCLUSTER_DIR/node1/log/fsd.log' ||
      grep -q 'slot 2 recovered' '$LOCALCLUSTER_DIR/node2/log/fsd.log')"
check "node1 alone writes on" sh -c ": >'${M[1]}/work/alone'"
check_eq "node2's fsync'ed data survives" 1000 "$(wc -c <"${M[1]}/durable2")"
for k in 2 3; do
	lc umount "$k" >/dev/null 2>&1
	lc start "$k" >/dev/null
	run_check "node$k mounts again" mnt "$k"
done
check "node2 sees node1's work" test -e "${M[2]}/work/alone"

echo "-- a node that dies alone is recovered by the next one to mount"
for k in 2 3; do check "node$k unmounts" lc umount "$k"; done
fsynced "${M[1]}/lonely" "node1 fsync'ed this alone" 30
lc kill 1 >/dev/null
lc umount 1 >/dev/null 2>&1
seen=$(grep -c 'recovered' "$LOCALCLUSTER_DIR/node2/log/fsd.log")
run_check "node2 mounts after node1 died alone" mnt 2
check "node2 recovered node1's slot while mounting" sh -c \
    "tail -n +$((seen + 1)) '$LOCALCLUSTER_DIR/node2/log/fsd.log' | grep -q 'slot 0 .*recovered'"
check_eq "node1's fsync'ed data survives" 780 "$(wc -c <"${M[2]}/lonely")"

echo "-- the locks of inodes the kernel forgot are given up beyond lock_cache"
run_check "node3 mounts with lock_cache=16" node_mount 3 -o lock_cache=16
mkdir "${M[3]}/lc"
for i in $(seq 200); do echo "v$i" >"${M[3]}/lc/f$i"; done
cat "${M[2]}/lc/f1" >/dev/null
locks3() { mounts_json 3 | jq '.[0].locks'; }
locks_below() { (($(locks3) < $1)); }
held=$(locks3)
check "node3 caches a lock for each file it made" test "$held" -ge 400
sync
echo 2 >/proc/sys/vm/drop_caches
check "once the kernel forgets them, node3 keeps 16 idle, not all" wait_for 30 locks_below 100
echo changed >"${M[2]}/lc/f7"
check_eq "node3 reads node2's change of a file whose lock it gave up" changed "$(cat "${M[3]}/lc/f7")"
echo again >"${M[3]}/lc/f8"
check_eq "node2 reads node3's write under a lock taken afresh" again "$(cat "${M[2]}/lc/f8")"
check_eq "every file is there" 200 "$(ls "${M[2]}/lc" | wc -l)"
check "node3 unmounts" lc umount 3

echo "-- unmount; fsck"
check "node2 unmounts" lc umount 2
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"
finish
