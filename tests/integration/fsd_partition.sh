#!/usr/bin/env bash
# A network partition under a mounted volume: three nodes, each in its own
# network namespace (localcluster up --netns), all mounted; node3's links
# to the others are cut while it writes and fsyncs. node3 is alone (1 of 3):
# it fences itself, its fsd is killed before its heartbeat stops, its dlmd
# exits (its locks are void, and it must not recover its peers), and
# only once the survivors see that heartbeat die do they recover its slot
# and lock state. Every record node3's fsync acknowledged is on disk; the
# file does not change after the fence; the survivors write on; healed and
# cleared, node3 mounts again. fsck.ocfs2 finds the volume clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 3 fsd hbd netd' EXIT

M=()
not() { ! "$@"; }
fenced() { o2 "$1" --json net-status | grep -q '"fenced":true'; }
hb_sees() { o2 "$1" --json net-status | grep -q "\"node\":$2,[^}]*\"heartbeat\":$3"; }
# log_time K DAEMON TEXT: the time of node K's first DAEMON log line with TEXT.
log_time() {
	grep -m1 "$3" "$LOCALCLUSTER_DIR/node$1/log/$2.log" | cut -d' ' -f1
}
alive() { kill -0 "$(cat "$LOCALCLUSTER_DIR/node$1/pids/$2.pid")" 2>/dev/null; }
recovered_by() {
	grep -l "slot $1 recovered" "$LOCALCLUSTER_DIR"/node[12]/log/fsd.log 2>/dev/null | head -n 1
}

echo "-- setup: three nodes in three namespaces, all mounted"
if ! lc up 3 --netns --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 3 --netns"; finish; exit 1
fi
# A short idle timeout: a cut link counts as lost after 1 s, not 30.
for k in 1 2 3; do
	o2 $k set cluster/lc/keepalive_delay_ms 300 >/dev/null
	o2 $k set cluster/lc/idle_timeout_ms 1000 >/dev/null
	printf 'O2CB_IDLE_TIMEOUT_MS=1000\nO2CB_KEEPALIVE_DELAY_MS=300\n' >>"$LOCALCLUSTER_DIR/node$k/o2cb"
done
for k in 1 2 3; do run_check "node$k mounts the volume" node_mount "$k"; done
check "every node links the others" wait_for 30 mesh_up 3
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
slot3=$(grep -m1 -o 'slot [0-9]*, node 3' "$LOCALCLUSTER_DIR/node3/log/fsd.log" | cut -d' ' -f2 | tr -d ,)
check "node3 has a slot" test -n "$slot3"
mkdir "${M[1]}/shared"
echo "from node1" >"${M[1]}/shared/one"

echo "-- node3 cut off while it writes and fsyncs"
# Each record is acknowledged (in acked3, outside the volume) only after
# its fsync returned.
python3 - "${M[3]}/shared/three" "$FSD_DIR/acked3" <<'EOF' 2>/dev/null &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
ack = open(sys.argv[2], "w", buffering=1)
i = 0
while True:
	os.write(fd, b"record %06d\n" % i)
	os.fsync(fd)
	ack.write("%d\n" % i)
	i += 1
EOF
BG+=($!)
wait_for 10 test -s "$FSD_DIR/acked3"
lc cut 1 3 >/dev/null
lc cut 2 3 >/dev/null
check "node3 fences itself (alone: 1 of 3)" wait_for 20 fenced 3
check "node1 does not" not fenced 1
check "node2 does not" not fenced 2
check "node3's fsd is killed" wait_for 10 not alive 3 fsd
check "node3's dlmd, whose locks are void, exits" wait_for 10 not alive 3 dlmd
check "... without taking its peers for dead" not grep -q "recovering its locks" "$LOCALCLUSTER_DIR/node3/log/dlmd.log"
bg_stop_all
check "the survivors see node3's heartbeat die" wait_for 20 hb_sees 1 3 false
check "a survivor recovers node3's slot" wait_for 30 sh -c "grep -q 'slot $slot3 recovered' '$LOCALCLUSTER_DIR'/node[12]/log/fsd.log"
gone=$(log_time 3 hbd "is gone")
died=$(grep -h -m1 "node 3 died" "$LOCALCLUSTER_DIR"/node[12]/log/dlmd.log | cut -d' ' -f1 | sort | head -n 1)
check "node3's fsd was gone ($gone) before any survivor took node3 for dead ($died)" \
    test -n "$gone" -a -n "$died" -a "$gone" '<' "$died"
check "and it was recovered by a survivor" test -n "$(recovered_by "$slot3")"
last=$(tail -n 1 "$FSD_DIR/acked3")
check "node3 acknowledged records before the cut" test -n "$last"
check "node1 appends to node3's file" sh -c "echo 'after the partition' >>'${M[1]}/shared/three'"
check "every record node3's fsync acknowledged is there" \
    grep -q "^record $(printf %06d "$last")\$" "${M[1]}/shared/three"
check "node3's records are whole and in order" sh -c \
    "grep -v 'after the partition' '${M[1]}/shared/three' | awk '\$0 != sprintf(\"record %06d\", NR - 1) { exit 1 }'"
snap=$(md5sum <"${M[2]}/shared/three")
sleep 3
check_eq "nothing of node3's reaches the file after its fence" "$snap" "$(md5sum <"${M[2]}/shared/three")"
check "node3's mount is dead, not writable" not sh -c ": >'${M[3]}/shared/late'"
check "node2 creates files after the partition" sh -c "cd '${M[2]}/shared' && for i in 1 2 3 4 5; do : >n2-\$i; done"
check_eq "node1 lists them" 5 "$(ls "${M[1]}/shared" | grep -c '^n2-')"

echo "-- healed and cleared, node3 comes back"
lc heal 1 3 >/dev/null
lc heal 2 3 >/dev/null
lc exec 3 "$O2CTL" clear-fence >/dev/null
lc umount 3 >/dev/null 2>&1
lc restart 3 >/dev/null
run_check "node3 mounts again" node_mount 3
check "node3 links the others again" wait_for 30 mesh_up 3
check "node3 sees what the survivors wrote" grep -q "after the partition" "${M[3]}/shared/three"
check_eq "node3 lists node2's files" 5 "$(ls "${M[3]}/shared" | grep -c '^n2-')"
check "node3 writes again" sh -c "echo back >'${M[3]}/shared/back'"
check_eq "node1 reads it" back "$(cat "${M[1]}/shared/back")"

echo "-- unmount everywhere; fsck"
for k in 1 2 3; do check "node$k unmounts" lc umount "$k"; done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"
finish
