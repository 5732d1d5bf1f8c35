#!/usr/bin/env bash
# Who netd refuses, and that it stays up serving its other links while
# it does: an unknown source address, a wrong-direction connect, a
# duplicate, garbage bytes, a slow-loris, an oversized frame, a wrong
# cluster name and mismatched timeouts. Each refuses that connection
# only: the real peer, back, links at once, even past a slow-loris from
# its address. A flood of connections costs a bounded number of log
# lines, and a peer's text is logged escaped. The hostile peer is
# netd_peer, connecting from a cluster address as an attacker on that
# host would.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"

lc_setup
trap netd_cleanup EXIT
OUT=$(mktemp -d /tmp/netd-ref.XXXXXX)
IDLE=3000 KA=1000

netd_up 3 || { fail "localcluster up 3"; finish; exit 1; }
# Short timeouts, set while no link exists (nmd refuses them later), and
# in each node's o2cb file for its restarts.
for k in 1 2 3; do
	o2 $k set cluster/lc/keepalive_delay_ms $KA >/dev/null
	o2 $k set cluster/lc/idle_timeout_ms $IDLE >/dev/null
	printf 'O2CB_IDLE_TIMEOUT_MS=%s\nO2CB_KEEPALIVE_DELAY_MS=%s\n' $IDLE $KA \
	    >>"$LOCALCLUSTER_DIR/node$k/o2cb"
done
for k in 1 2 3; do hb_start $k; done
check "all three nodes linked" wait_for 30 mesh_up 3
echo_start 1 "$OUT/echo1"
echo_start 2 "$OUT/echo2"
P1=$(addr 1):$LOCALCLUSTER_PORT P2=$(addr 2):$LOCALCLUSTER_PORT
HS=(--cluster lc --hb-write $HBW --idle $IDLE --keepalive $KA --to-node 1)

logged() { grep -q "$2" "$LOCALCLUSTER_DIR/node$1/log/netd.log"; }
not() { ! "$@"; }

echo "-- refused at accept"
check "an unknown source address (127.0.0.99)" "$PEER" connect --from 127.0.0.99 --to "$P1"
check "... logged" logged 1 "attempt to connect from unknown node at 127.0.0.99"
check "a wrong-direction connect (node1 to node2)" "$PEER" connect --from "$(addr 1)" --to "$P2"
check "... logged" logged 2 "unexpected connect attempt from node 1"
check "a duplicate of node3's link" "$PEER" connect --from "$(addr 3)" --to "$P1"
check "... logged" logged 1 "node 3 (node3) at 127.0.0.3 already has a link\|node 3 (node3) at 127.0.0.4 already has a link"
check "node3's real link is untouched" links_up 1 3
check "a flood of 2000 connections from an unknown address, each refused" \
    "$PEER" flood --from 127.0.0.98 --to "$P1" --count 2000
flood_lines=$(grep -c "unknown node at 127.0.0.98" "$LOCALCLUSTER_DIR/node1/log/netd.log")
check "... logged in at most 20 lines ($flood_lines)" test "$flood_lines" -ge 1 -a "$flood_lines" -le 20

echo "-- node3's address without node3's netd (its heartbeat goes on)"
kill -9 "$(netd_pid 3)"
check "node1 sees the link to node3 go" wait_for 10 link_is 1 3 down
check "garbage bytes close the connection" "$PEER" garbage --from "$(addr 3)" --to "$P1"
check "... logged" logged 1 "node 3 sent bad magic 0x4745"
o2 1 net-send 2 --count 20000 --window 64 >"$OUT/during" 2>&1 &
during=$!
check "a slow-loris is cut off after the idle timeout" "$PEER" slowloris --from "$(addr 3)" \
    --to "$P1" --byte-ms 300 --wait 8000
check "... logged" logged 1 "no complete handshake within $IDLE ms"
wait "$during"
check_eq "node1 -> node2 traffic ran meanwhile, every answer right" "0" "$?"
check "node1 warns that no link to node3 came up in reconnect + idle time" \
    wait_for 10 logged 1 "no connection established with node 3 (node3) after 5.0 seconds"
check "an oversized frame on an established link closes it" "$PEER" oversize --from "$(addr 3)" \
    --to "$P1" --from-node 3 "${HS[@]}"
check "... logged" logged 1 "request frame of 8193 bytes (limit 8192)"

echo "-- a failed handshake refuses that connection only"
check "a wrong cluster name, with control bytes in it" "$PEER" handshake --from "$(addr 3)" \
    --to "$P1" --from-node 3 --cluster $'x\ny\x1b[31m' --hb-write $HBW --idle $IDLE \
    --keepalive $KA --to-node 1
check "... logged escaped" logged 1 'node 3 is in cluster "x\\ny\\x1b\[31m", but we are in cluster "lc"'
check "... and no raw escape byte reached the log" not grep -q $'\x1b' "$LOCALCLUSTER_DIR/node1/log/netd.log"
check "a mismatched idle timeout" "$PEER" handshake --from "$(addr 3)" --to "$P2" --from-node 3 \
    --cluster lc --hb-write $HBW --idle 9999 --keepalive $KA --to-node 2
check "... logged with both values" logged 2 "node 3 uses a network idle timeout of 9999 ms, but we use $IDLE ms locally"
check "a mismatched heartbeat write timeout" "$PEER" handshake --from "$(addr 3)" --to "$P1" \
    --from-node 3 --cluster lc --hb-write 60000 --idle $IDLE --keepalive $KA --to-node 1
check "node1 does not hold it against node3" link_is 1 3 down
"$PEER" slowloris --from "$(addr 3)" --to "$P1" --byte-ms 300 --wait 8000 >"$OUT/loris" 2>&1 &
loris=$!
sleep 0.5
lc start 3 >/dev/null
check "node3's own netd links both nodes at its first attempts, past the slow-loris" \
    wait_for 2 mesh_up 3
wait "$loris"
check "... which netd still cut off" grep -q "closed by netd" "$OUT/loris"
check "node3 -> node1 messages flow" o2 3 net-send 1 --count 500
check "the flood's refusals were summed up" wait_for 15 logged 1 \
    "more refused connections from 127.0.0.98 in the last"

echo "-- netd stayed up and serves its links"
for k in 1 2 3; do check "netd of node$k answers" o2 $k ping netd; done
check "node1 -> node2" o2 1 net-send 2 --count 500
check "node3 -> node2" o2 3 net-send 2 --count 500

rm -rf "$OUT"
finish
