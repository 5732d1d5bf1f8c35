#!/usr/bin/env bash
# The dlmfs tree on two nodes, driven from the shell as the kernel's
# ocfs2_dlmfs is: mkdir joins a domain, open(2) takes a lock (PR for
# O_RDONLY, else EX; O_NONBLOCK a trylock failing with ETXTBSY), the
# file's contents are the LVB, poll(2) shows another node's BAST,
# unlink refuses a lock in use, and bad names are EINVAL. dlmfs is a
# process of its own: the tree outlives a restart of dlmd, the locks held
# through the old dlmd are lost (EIO), and the domains are joined again.
source "$(dirname "$0")/../lib.sh"

lc_setup
OUT=$(mktemp -d /tmp/dlmfs.XXXXXX)
BG=()
cleanup() {
	local p
	for p in "${BG[@]}" $(cat "$OUT"/*.pid 2>/dev/null); do kill "$p" 2>/dev/null; done
	lc down >/dev/null 2>&1 || true
	rm -rf "$OUT"
}
trap cleanup EXIT

dlm() { printf '%s/dlm' "$(lc rundir "$1")"; }
# on K CMD: run a shell command as node K, with $D its dlmfs tree.
on() { local k=$1; shift; D=$(dlm "$k") sh -c "$*"; }
# hold K NAME OUT [CMD]: node K holds lock dom/NAME EX (fd 9, after CMD) until unhold.
hold() {
	on "$1" "echo \$\$ >'$OUT/$3.pid'; exec 9>\$D/dom/$2; ${4:-:}; echo held; exec sleep 60" >"$OUT/$3" 2>&1 &
	wait_for 10 grep -q held "$OUT/$3"
}
unhold() { kill "$(cat "$OUT/$1.pid")"; }
not() { ! "$@"; }
# linked K N: node K sees node N heartbeating with its link up.
linked() {
	"$O2CTL" --rundir "$(lc rundir "$1")" --json status |
	    grep -q "\"num\":$2,[^}]*\"local\":false,[^}]*\"heartbeat\":\"up\",\"link\":\"up\""
}
# try K MODE FILE: a trylock open (PR or EX, creating FILE) that prints ok or the errno name.
try() {
	python3 -c '
import errno, os, sys
fl = os.O_RDONLY if sys.argv[1] == "PR" else os.O_RDWR
try:
    os.close(os.open(sys.argv[2], fl | os.O_NONBLOCK | os.O_CREAT, 0o644))
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
    sys.exit(1)' "$2" "$(dlm "$1")/$3"
}

lc up 2 --hb-interval-ms 200 --dead-threshold 10 >/dev/null || { fail "localcluster up 2"; finish; exit 1; }
for k in 1 2; do
	lc exec "$k" sh -c '"$OCFS2_BUILD/o2ctl" heartbeat start "$OCFS2_IMAGE"' >/dev/null
done
both_linked() { linked 1 2 && linked 2 1; }
# A domain joined before the nodes see each other would be a node's own.
check "node1 and node2 linked" wait_for 30 both_linked
for k in 1 2; do
	check "node$k: dlmfs mounted as ocfs2_dlmfs" wait_for 20 grep -q "^ocfs2_dlmfs $(dlm "$k") " /proc/mounts
done

echo "-- domains"
check "node1: mkdir joins domain dom" on 1 'mkdir $D/dom'
check "node2: mkdir joins domain dom" on 2 'mkdir $D/dom'
check_eq "node1: ls shows the domain" "dom" "$(ls "$(dlm 1)")"
expect_error "mkdir inside a domain" "Operation not permitted" on 1 'mkdir $D/dom/sub'
expect_error "a domain name of 64 bytes" "Invalid argument" on 1 "mkdir \$D/$(printf 'd%.0s' {1..64})"
check "a domain name of 63 bytes" on 1 "mkdir \$D/$(printf 'd%.0s' {1..63}) && rmdir \$D/$(printf 'd%.0s' {1..63})"
expect_error "mkdir twice" "File exists" on 1 'mkdir $D/dom'
check "mkdir then rmdir of a second domain" on 1 'mkdir $D/other && rmdir $D/other && ! test -e $D/other'

echo "-- bad names"
expect_error "a lock name of 32 bytes" "Invalid argument" on 1 ": > \$D/dom/$(printf 'l%.0s' {1..32})"
expect_error "a lock name starting with \$" "Invalid argument" on 1 ': > $D/dom/\$lock'
expect_error "a file at the root" "Permission denied" on 1 ': > $D/file'
check "a lock name of 31 bytes" on 1 ": > \$D/dom/$(printf 'l%.0s' {1..31})"
check "lock files are 64 bytes" on 1 "test \$(stat -c %s \$D/dom/$(printf 'l%.0s' {1..31})) = 64"

echo "-- EX across nodes, blocking and trylock"
check "node1: creating lk takes EX" on 1 ': > $D/dom/lk'
check "node1 holds lk EX and writes its LVB" hold 1 lk hold1 'printf hello >&9'
check_eq "node2: EX trylock is ETXTBSY" "ETXTBSY" "$(try 2 EX dom/lk)"
check_eq "node2: PR trylock is ETXTBSY" "ETXTBSY" "$(try 2 PR dom/lk)"
on 2 'exec 8<$D/dom/lk; echo granted; head -c 5 <&8' >"$OUT/wait2" 2>&1 &
BG+=($!)
sleep 1
check_eq "node2: a blocking PR open waits" "" "$(cat "$OUT/wait2")"
expect_error "node1: unlink of a held lock" "Device or resource busy" on 1 'rm $D/dom/lk'
unhold hold1
check "node2: PR granted once node1 closes" wait_for 10 grep -q granted "$OUT/wait2"
check "node2 reads the LVB node1 wrote" wait_for 5 grep -q hello "$OUT/wait2"
check "node1: a local PR open while node2 holds PR" timeout 5 sh -c "head -c 5 '$(dlm 1)/dom/lk' | grep -q hello"

echo "-- poll shows a BAST"
python3 -c '
import os, select, sys
fd = os.open(sys.argv[1], os.O_RDWR)
p = select.poll(); p.register(fd, select.POLLIN)
print("held", flush=True)
print("bast" if p.poll(20000) else "none", flush=True)' "$(dlm 2)/dom/lk" >"$OUT/poll2" 2>&1 &
BG+=($!)
check "node2 holds lk EX and polls" wait_for 10 grep -q held "$OUT/poll2"
check_eq "no POLLIN without a waiter" "held" "$(cat "$OUT/poll2")"
on 1 'exec 9>$D/dom/lk; echo got-ex' >"$OUT/ex1" 2>&1 &
BG+=($!)
check "node2: poll wakes with POLLIN when node1 asks" wait_for 10 grep -q bast "$OUT/poll2"
check "node1 gets EX once node2's poller closes" wait_for 10 grep -q got-ex "$OUT/ex1"

echo "-- interrupted blocking open"
check "node1 holds lk EX again" hold 1 lk hold1b
expect_error "node2: SIGINT ends a blocking open with EINTR" "Interrupted system call" \
    on 2 'timeout -s INT 1 sh -c "exec 9>\$D/dom/lk"; exit 1'
unhold hold1b
check "node2 gets EX after the interrupt and node1's close" on 2 'timeout 10 sh -c "exec 9>\$D/dom/lk"'

echo "-- dlmd restarts under the tree"
# Holds dom/lkr EX, then once told (a file) reads it through the same open file.
python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
print("held", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
try:
    os.pread(fd, 64, 0)
    print("read", flush=True)
except OSError as e:
    print("read: " + os.strerror(e.errno), flush=True)
time.sleep(60)' "$(dlm 1)/dom/lkr" "$OUT/go" >"$OUT/lost1" 2>&1 &
lost1=$!
BG+=($lost1)
check "node1 holds lkr EX" wait_for 10 grep -q held "$OUT/lost1"
check_eq "node2: EX trylock of lkr is ETXTBSY" "ETXTBSY" "$(try 2 EX dom/lkr)"
dlmd1=$(cat "$LOCALCLUSTER_DIR/node1/pids/dlmd.pid")
kill -TERM "$dlmd1"
check "node1: dlmd stops" wait_for 15 not kill -0 "$dlmd1"
check "node1: the tree stays mounted" grep -q "^ocfs2_dlmfs $(dlm 1) " /proc/mounts
touch "$OUT/go"
check "node1: the open file of the lost lock reads EIO" wait_for 5 grep -q "read: Input/output error" "$OUT/lost1"
check_eq "node2: lkr is free once node1's dlmd left" "ok" "$(try 2 EX dom/lkr)"
check "node1: dlmd starts again" lc start 1
# ENOTCONN until dlmfs has reconnected (every 500 ms); then it waits for the rejoin.
check "node1: an open after the restart gets EX once dlmfs has rejoined" \
    wait_for 20 on 1 'timeout 10 sh -c "exec 9>\$D/dom/lkr"'
kill "$lost1"
check "node1: lkr unlinked once its old open file is closed too" wait_for 5 on 1 'rm $D/dom/lkr'

echo "-- unlink and rmdir"
check "node2: unlink of an unused lock" wait_for 5 on 2 'rm $D/dom/lk'
check "node1: unlink of an unused lock" wait_for 5 on 1 'rm $D/dom/lk'
expect_error "rmdir of a domain with lock files" "Directory not empty" on 1 'rmdir $D/dom'
check "unlink the rest, then rmdir leaves" on 1 'rm $D/dom/* && rmdir $D/dom && ! test -e $D/dom'
check "node2: rm and rmdir" on 2 'rm -f $D/dom/* && rmdir $D/dom'

finish
