#!/usr/bin/env bash
# dlmd on three nodes through its tools: o2lock serialises commands
# across nodes (EX waits, PR shares, trylock and timeout fail with 1),
# o2ctl shows domains and a domain's locks, and an EX request is granted
# while readers on two other nodes hammer PR (new locks and cached ones).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"

lc_setup
O2LOCK=$BUILD/o2lock
TORTURE=$BUILD/progs/dlm_torture
OUT=$(mktemp -d /tmp/dlmd_locks.XXXXXX)
cleanup() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	lc down >/dev/null 2>&1 || true
	rm -rf "$OUT"
}
trap cleanup EXIT

ol() { local k=$1; shift; lc exec "$k" "$O2LOCK" -d locks "$@"; }
o2j() { local k=$1; shift; "$O2CTL" --rundir "$(rundir "$k")" --json "$@"; }

# bg_hold K NAME MODE TAG: node K holds NAME until `release TAG`.
bg_hold() {
	ol "$1" "-$3" "$2" sh -c "echo \$\$ >$OUT/$4.pid; echo held >$OUT/$4; exec sleep 60" &
	BG+=($!)
	wait_for 20 grep -q held "$OUT/$4"
}
# release TAG: end the command, so that o2lock unlocks.
release() { kill "$(cat "$OUT/$1.pid")"; }

echo "-- setup"
netd_up 3 || { fail "localcluster up 3"; finish; exit 1; }
for k in 1 2 3; do hb_start "$k"; done
check "every node linked to every other" wait_for 20 mesh_up 3

echo "-- o2lock across nodes"
check "a lock on node1 runs the command" ol 1 -x job true
bg_hold 1 job x held1
check "node1 holds job EX" test -s "$OUT/held1"
expect_error "node2 -n while node1 holds it: exit 1" "busy" ol 2 -n job true
expect_error "node2 -w 0.5 while node1 holds it: exit 1" "" ol 2 -w 0.5 job true
rc=0; ol 2 -n job true 2>/dev/null || rc=$?
check_eq "the busy exit status is 1" 1 "$rc"
check "o2ctl dlm on node1 lists the domain" sh -c \
    "'$O2CTL' --rundir '$(rundir 1)' --json dlm | jq -e '.domains[] | select(.name == \"locks\")'"
check "o2ctl locks shows job granted EX on node1" sh -c \
    "'$O2CTL' --rundir '$(rundir 1)' locks locks | grep -E 'granted .* node 1 +EX'"
ol 2 -x -v job sh -c "date +%s%N >$OUT/got2" >/dev/null 2>&1 &
waiter=$!
sleep 0.5
check "node2 waits while node1 holds it" test ! -e "$OUT/got2"
release held1
check "node2 gets it once node1's command ends" wait_for 20 test -s "$OUT/got2"
wait "$waiter"

echo "-- a client's domain name is logged escaped"
check "a domain named with a newline and an escape byte" lc exec 1 "$O2LOCK" -d $'esc\nx\x1b[2J' -x e true
check "... dlmd logs its name escaped" grep -q 'domain esc\\nx\\x1b\[2J: joining' \
    "$LOCALCLUSTER_DIR/node1/log/dlmd.log"
check "... and no raw escape byte" sh -c "! grep -q \"\$(printf '\\033')\" '$LOCALCLUSTER_DIR/node1/log/dlmd.log'"

echo "-- shared locks"
bg_hold 1 shared s s1
bg_hold 2 shared s s2
check "PR on node1 and node2 at once" test -s "$OUT/s1" -a -s "$OUT/s2"
expect_error "EX on node3 is busy under two readers" "busy" ol 3 -n -x shared true
release s1
release s2
check "EX on node3 once the readers leave" ol 3 -w 20 -x shared true

echo "-- readers do not starve a writer"
for k in 1 2; do
	lc exec "$k" "$TORTURE" --mode read -i 1000000 -d locks -l hot --timeout 60 \
	    >/dev/null 2>&1 &
	BG+=($!)
	lc exec "$k" "$TORTURE" --mode read -i 1000000 -d locks -l hot --convert \
	    --timeout 60 >/dev/null 2>&1 &
	BG+=($!)
done
sleep 1
start=$(date +%s%N)
check "EX on node3 within 10 s while four readers hammer PR" ol 3 -w 10 -x hot true
ms=$((($(date +%s%N) - start) / 1000000))
echo "   (EX granted after ${ms} ms)"

finish
