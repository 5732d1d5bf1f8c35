#!/usr/bin/env bash
# Quorum on network partitions, with every node in its own network
# namespace (localcluster up --netns) and one veth per pair of nodes, so
# that links are cut for real while the shared disk stays: 4 nodes split
# 2|2 -> the half without node1 fences itself; 3|1 -> the single node
# fences; a link that flaps for longer than the idle timeout but shorter
# than the quorum delay fences nobody. A cut that leaves both sides in
# quorum fails the requests that wait on it instead of leaving them
# waiting for ever: one in flight with EHOSTDOWN once quorum has
# decided, one waiting for a first link with ETIMEDOUT (o2net's
# connect_expired), later ones at once; a lock request waits, with dlmd
# saying why, and is granted once healed. Survivors keep every link to each
# other, and see a fenced node's heartbeat die only after it fenced.
# Cleared, a fenced node links up again without a restart.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"

lc_setup
OUT=$(mktemp -d /tmp/netd-part.XXXXXX)
trap 'netd_cleanup; rm -rf "$OUT"' EXIT
THR=20			# dead after 4 s; quorum delay (20 + 2) x 200 ms = 4.4 s
# A short idle timeout, so that a flap counts as a lost link well before
# the quorum delay ends even after TCP's retransmission backoff.
IDLE=1000 KA=300

fenced() { o2 "$1" --json net-status | grep -q '"fenced":true'; }
not_fenced() { ! fenced "$1"; }
# links_down K N...: node K has no link up to any N.
links_down() {
	local k=$1 n
	shift
	for n in "$@"; do
		link_is "$k" "$n" up && return 1
	done
	return 0
}
# link_hb K N true|false: node K's netd sees node N's heartbeat so.
link_hb() {
	o2 "$1" --json net-status | grep -q "\"node\":$2,[^}]*\"heartbeat\":$3"
}
# ol K ARGS: o2lock on node K, in lock domain "part".
ol() { local k=$1; shift; lc exec "$k" "$BUILD/o2lock" -d part "$@"; }
# bg_hold K NAME: node K holds NAME (EX) in the background, joined to "part".
bg_hold() {
	ol "$1" -x "$2" sh -c "echo held >$OUT/$2; exec sleep 120" >/dev/null 2>&1 &
	BG+=($!)
}
# log_time K TEXT: the time of the first netd log line of node K with TEXT.
log_time() {
	grep -m1 "$2" "$LOCALCLUSTER_DIR/node$1/log/netd.log" | cut -d' ' -f1
}

lc up 4 --netns --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null ||
	{ fail "localcluster up 4 --netns"; finish; exit 1; }
for k in 1 2 3 4; do
	o2 $k set cluster/lc/keepalive_delay_ms $KA >/dev/null
	o2 $k set cluster/lc/idle_timeout_ms $IDLE >/dev/null
	printf 'O2CB_IDLE_TIMEOUT_MS=%s\nO2CB_KEEPALIVE_DELAY_MS=%s\n' $IDLE $KA \
	    >>"$LOCALCLUSTER_DIR/node$k/o2cb"
done
for k in 1 2 3 4; do hb_start $k; done
check "four nodes in four namespaces, all linked" wait_for 30 mesh_up 4
check "node1 reaches node4 over their own veth" bash -c \
    "ip -n $(cat "$LOCALCLUSTER_DIR/netns")-n1 route get 10.77.0.4 | grep -q 'dev p4'"

echo "-- a flap longer than the idle timeout, shorter than the quorum delay"
lc cut 1 4 >/dev/null
check "node1 counts the link to node4 lost (idle)" wait_for 10 link_is 1 4 idle
lc heal 1 4 >/dev/null
check "the link carries traffic again" wait_for 10 link_is 1 4 up
sleep 6
for k in 1 2 3 4; do check "node$k not fenced" not_fenced $k; done
check "the whole mesh is up" mesh_up 4

echo "-- a cut that leaves both sides in quorum: requests fail, they do not wait"
bg_hold 1 one
check "node1 joins a lock domain first (its directory)" wait_for 20 test -s "$OUT/one"
bg_hold 4 four
check "node4 joins it too" wait_for 20 test -s "$OUT/four"
lc cut 1 4 >/dev/null
ol 4 -x cut sh -c "echo granted >$OUT/cut" >/dev/null 2>&1 &
BG+=($!)
t0=$SECONDS
check "a message in flight from node4 to node1 fails with EHOSTDOWN" \
    timeout 20 "$O2CTL" --rundir "$(rundir 4)" net-send 1 --count 1 --expect-errno 112
check "... once quorum decided, within 10 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -le 10
check "... logged, naming node1" grep -q "in flight to node 1 (node1) fail.* with EHOSTDOWN" \
    "$LOCALCLUSTER_DIR/node4/log/netd.log"
for k in 1 4; do check "node$k not fenced" not_fenced $k; done
check "node4's lock request waits, and its dlmd says for whom" wait_for 10 grep -q \
    "of cut to node 1 failed: .* it waits" "$LOCALCLUSTER_DIR/node4/log/dlmd.log"
check "... in a bounded number of lines" test "$(grep -c 'to node 1 failed' \
    "$LOCALCLUSTER_DIR/node4/log/dlmd.log")" -le 2
check "the next one fails at once with ENOTCONN" timeout 5 \
    "$O2CTL" --rundir "$(rundir 4)" net-send 1 --count 1 --expect-errno 107
# node1's netd, restarted, waits for a first link to node4 that cannot come.
kill -9 "$(netd_pid 1)"
lc start 1 >/dev/null
check "node1's new netd links node2 and node3" wait_for 10 links_up 1 2 3
t0=$SECONDS
check "a message from node1 waiting for its first link to node4 fails with ETIMEDOUT" \
    timeout 20 "$O2CTL" --rundir "$(rundir 1)" net-send 4 --count 1 --expect-errno 110
check "... at most reconnect delay + idle timeout after node1 saw node4 heartbeat ($((SECONDS - t0)) s)" \
    test $((SECONDS - t0)) -le 8
check "... logged, naming node4" grep -q "1 request to node 4 (node4) waited .* secs for a link that did not come" \
    "$LOCALCLUSTER_DIR/node1/log/netd.log"
lc heal 1 4 >/dev/null
check "healed, the whole mesh is up again" wait_for 20 mesh_up 4
check "node4's waiting lock request is granted" wait_for 20 grep -q granted "$OUT/cut"
bg_stop_all
check "node4 -> node1 messages flow" bash -c "
	'$O2CTL' --rundir '$(rundir 1)' net-echo --count 100 >/dev/null & p=\$!; sleep 0.3
	'$O2CTL' --rundir '$(rundir 4)' net-send 1 --count 100; rc=\$?; wait \$p; exit \$rc"

echo "-- 2|2: the half without node1 fences"
for a in 1 2; do for b in 3 4; do lc cut $a $b >/dev/null; done; done
check "node3 fences" wait_for 20 fenced 3
check "node4 fences" wait_for 20 fenced 4
check "node1 does not" not_fenced 1
check "node2 does not" not_fenced 2
check "node1 and node2 keep their link" links_up 1 2
check "survivors see node3's heartbeat die" wait_for 20 link_hb 1 3 false
check "... and node4's" wait_for 20 link_hb 2 4 false
f3=$(log_time 3 "fencing this node") d3=$(log_time 1 "node 3 (node3) stopped heartbeating")
check "node3 fenced ($f3) before node1 saw it dead ($d3)" test "$f3" '<' "$d3"
# node3 and node4 decide after the same delay; whichever fences first cuts
# the other's last link, so node3 may decide on half without node1 or on
# one of the three nodes still heartbeating: both are quorum losses.
check "node3 says why" grep -Eq "fencing this node: quorum lost: connected to (half \(2 of 4\).*without the lowest-numbered one \(node 1\)|1 of 3 heartbeating nodes)" "$LOCALCLUSTER_DIR/node3/log/netd.log"
check "node1 -> node2 messages flow" bash -c "
	'$O2CTL' --rundir '$(rundir 2)' net-echo --count 100 >/dev/null & p=\$!; sleep 0.3
	'$O2CTL' --rundir '$(rundir 1)' net-send 2 --count 100; rc=\$?; wait \$p; exit \$rc"

echo "-- healed and cleared, the fenced half rejoins without a restart"
for a in 1 2; do for b in 3 4; do lc heal $a $b >/dev/null; done; done
sleep 1
check "healed, fenced node3 stays out" links_down 3 1 2 4
# A fenced node stays fenced (hbd records it) until the admin clears the
# fence; then hbd heartbeats again and netd links up again by itself.
for k in 3 4; do check "node$k: o2ctl clear-fence" lc exec $k "$O2CTL" clear-fence; done
t0=$SECONDS
check "all four linked again within 20 s" wait_for 20 mesh_up 4
echo "   $((SECONDS - t0)) s from clear-fence to this check"
for k in 3 4; do
	check "node$k's netd is no longer fenced" not_fenced $k
	check "node$k: o2ctl status shows every node heartbeating and linked" \
	    status_linked $k 4
done

echo "-- 3|1: the single node fences"
for a in 1 2 3; do lc cut $a 4 >/dev/null; done
check "node4 fences" wait_for 20 fenced 4
for k in 1 2 3; do check "node$k does not" not_fenced $k; done
check "nodes 1, 2, 3 keep every link to each other" mesh_up 3
check "survivors see node4's heartbeat die" wait_for 20 link_hb 3 4 false

echo "-- a verdict that hbd missed is carried out when hbd is back"
for a in 1 2 3; do lc heal $a 4 >/dev/null; done
check "node4: o2ctl clear-fence" lc exec 4 "$O2CTL" clear-fence
check "all four linked again within 20 s" wait_for 20 mesh_up 4
# Its heartbeat stops with hbd: the others drop node4's links, and its
# netd, which keeps hbd's last membership, loses quorum with no hbd to
# carry out the fence.
kill -9 "$(cat "$LOCALCLUSTER_DIR/node4/pids/hbd.pid")"
check "node4's netd fences without hbd" wait_for 20 fenced 4
check "... and says that hbd must carry it out once back" grep -q \
    "hbd is not connected: it cannot fence this node until it is back" \
    "$LOCALCLUSTER_DIR/node4/log/netd.log"
check "node4's hbd restarted" lc start 4
check "the restarted hbd is asked again and fences" wait_for 10 sh -c \
    "$(printf '%q ' "$LOCALCLUSTER" exec 4 "$O2CTL" --json heartbeat) | jq -e '.fenced and (.fence_reason | test(\"quorum lost\"))'"

finish
