#!/usr/bin/env bash
# A SIGKILLed fsd stuck in the kernel on its own mount's page ends within
# seconds, because its guardian aborts its FUSE connection (fsd/guardian.c).
#
# Two nodes. The stuck state is built with real parts, as it arises under
# load (doc/daemon-failures.md, fsd row): node2 holds F's RW lock (o2lock
# in the volume's lock domain); on node1 a write(2) into a page of F that
# is not in the page cache keeps that page locked while its WRITE waits for
# the RW lock; node2 then asks for F's META lock, which node1 holds EX:
# node1's flush thread has the kernel drop F's pages (notify-inval-inode)
# and waits, inside the kernel, for the page the write holds. fsd is then
# SIGKILLed: that thread cannot leave the kernel until the WRITE is
# answered, and no thread is left to answer it. Without the guardian fsd
# stays a process holding its cluster locks (checked below: it still runs
# after GRACE_S) and the writer hangs; with it, fsd ends within GRACE_S,
# the writer gets an error, the mount answers ENOTCONN, and node2 recovers
# node1 and reads and writes F. A clean unmount leaves no guardian behind
# and aborts nothing. fsck.ocfs2 -fn finds the volume clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

GRACE_S=${FSD_GUARDIAN_GRACE_S:-5}	# for the killed fsd to end
M=()
HOLDERS=()
lc_setup
trap 'kill "${HOLDERS[@]}" 2>/dev/null; cluster_cleanup 2 fsd hbd dlmd' EXIT

pid_of() { cat "$LOCALCLUSTER_DIR/node$1/pids/$2.pid" 2>/dev/null; }
alive() { kill -0 "$1" 2>/dev/null; }
gone() { ! alive "$1"; }
guardian_of() { pgrep -P "$1" -x fsd-guardian; }
# holds_nothing G: the guardian G keeps no file of fsd's open (the image,
# /dev/fuse, a socket path, anything under a mountpoint) and sits in /.
holds_nothing() {
	local f t
	[[ $(readlink "/proc/$1/cwd") == / ]] || { echo "its directory: $(readlink "/proc/$1/cwd")"; return 1; }
	for f in /proc/"$1"/fd/*; do
		t=$(readlink "$f")
		case $t in
		/dev/null | socket:* | anon_inode:* | /sys/fs/fuse/connections/*/abort | */log/fsd.log) ;;
		*) echo "it holds $t"; return 1 ;;
		esac
	done
}
# stuck_in_kernel PID: a thread of PID waits uninterruptibly (state D).
stuck_in_kernel() { grep -q '^State:[[:space:]]*D' /proc/"$1"/task/*/status 2>/dev/null; }
# holding K LOCK [o2lock options]: node K's o2lock holds LOCK in the
# volume's domain until killed; its pid in HOLDERS.
holding() {
	local k=$1 lock=$2
	shift 2
	# not through lc (a function): $! is then o2lock itself, which localcluster execs
	"$LOCALCLUSTER" exec "$k" "$BUILD/o2lock" -v -d "$UUID" "$@" "$lock" sleep 600 \
	    >"$FSD_DIR/o2lock-$lock.out" 2>&1 &
	HOLDERS+=($!)
	wait_for 20 grep -q "holding .* $lock" "$FSD_DIR/o2lock-$lock.out"
}
# requests_waiting K: node K's FUSE connection has requests out.
requests_waiting() { note_dev "$1"; (($(cat "/sys/fs/fuse/connections/${FUSE_DEV[$1]#*:}/waiting") > 0)); }
enotconn() { stat "${M[1]}" 2>&1 | grep -q 'Transport endpoint is not connected'; }

echo "-- setup: two nodes mounted"
mount_two
UUID=$(debugfs.ocfs2 -R stats "$IMG" 2>/dev/null | awk '/UUID:/ { print toupper($2) }')

F=${M[1]}/f
check "node1 writes F (its META lock is left EX, cached)" \
    sh -c "head -c 65536 /dev/urandom >'$F' && sync '$F'"
# Its locks as node1's dlmd lists them (dlmglue's names: type letter,
# padding, block number, generation: 0 for META, the inode's for RW).
lockname() {
	o2 1 locks "$UUID" | grep -o -m1 "$1000000$(printf '%016x' "$(stat -c %i "$F")")[0-9a-f]\{8\}"
}
META=$(lockname M)
RW=$(lockname W)
check "F's lock names (META $META, RW $RW)" test "${#META}" -eq 31 -a "${#RW}" -eq 31

echo "-- the guardian of a mounted fsd"
FSD1=$(pid_of 1 fsd)
G1=$(guardian_of "$FSD1")
check "node1's fsd has a guardian (pid ${G1:-none})" test -n "$G1"
check "the guardian holds no file of fsd's and no directory" holds_nothing "$G1"

echo "-- node1's fsd stuck in the kernel on a page of its own mount, then killed"
run_check "node2 holds F's RW lock" holding 2 "$RW"
# 5 bytes into F's page 3, dropped from node1's cache by node2's RW request:
# the write holds that page locked while its WRITE waits for the RW lock.
python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.pwrite(fd, b'hello', 3 * 4096 + 10)
    print('written')
except OSError as e:
    print(e.strerror)
" "$F" >"$FSD_DIR/writer.out" 2>&1 &
WRITER=$!
check "the write waits for the RW lock (a request of node1's mount waits)" wait_for 20 requests_waiting 1
# granted once node1's downconvert gives up on a flush that has not come
# back from the kernel in FLUSH_WAIT_MS (fsd/dlmglue.c): the flush is stuck
check "node2 gets F's META lock: node1's flush waited for the page and was given up on" \
    "$LOCALCLUSTER" exec 2 "$BUILD/o2lock" -d "$UUID" -w 60 "$META" true
check "a thread of node1's fsd waits in the kernel (the flush, behind the written page)" \
    wait_for 20 stuck_in_kernel "$FSD1"
check "the write still waits" alive "$WRITER"
kill -KILL "$FSD1"
T0=$SECONDS
if wait_for "$GRACE_S" gone "$FSD1"; then
	pass "the killed fsd ends within $GRACE_S s ($((SECONDS - T0)) s)"
else
	fail "the killed fsd still runs $GRACE_S s after SIGKILL (stuck in the kernel)"
	note_dev 1
	abort_mount 1
	wait_for 10 gone "$FSD1"
fi
check "the writer gets an error, not a hang" wait_for 5 gone "$WRITER"
check "its write failed" sh -c "! grep -q written '$FSD_DIR/writer.out'"
check "node1's mount answers ENOTCONN" enotconn
check "the guardian is gone" wait_for 5 gone "$G1"
check "node1's fsd log: its guardian aborted the connection" \
    grep -q 'guardian: fsd (pid '"$FSD1"') died without unmounting: its FUSE connection' \
    "$LOCALCLUSTER_DIR/node1/log/fsd.log"

echo "-- node2 recovers node1 and has F"
kill "${HOLDERS[@]}" 2>/dev/null
wait "${HOLDERS[@]}" 2>/dev/null
HOLDERS=()
check "node2 recovers node1's slot" wait_for 30 grep -q 'slot [0-9]* recovered' "$LOCALCLUSTER_DIR/node2/log/fsd.log"
check "node2 reads F whole" bash -c "timeout 20 cat '${M[2]}/f' | wc -c | grep -qx 65536"
check "node2 writes F" timeout 20 sh -c "echo again >>'${M[2]}/f' && sync '${M[2]}/f'"

echo "-- a clean unmount: the guardian exits and aborts nothing"
check "node2's fsd has a guardian" test -n "$(guardian_of "$(pid_of 2 fsd)")"
G2=$(guardian_of "$(pid_of 2 fsd)")
check "node2 unmounts" lc umount 2
check "node2's guardian is gone" wait_for 5 gone "$G2"
check "nothing was aborted on node2" sh -c "! grep -q 'guardian:' '$LOCALCLUSTER_DIR/node2/log/fsd.log'"
lc stop 1 >/dev/null 2>&1
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
