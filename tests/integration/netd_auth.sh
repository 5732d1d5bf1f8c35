#!/usr/bin/env bash
# Links with a cluster key (o2ctl keygen; O2CB_AUTHKEY in each node's
# o2cb file): the nodes link and talk, authenticated; a peer without the
# key, one with a wrong key, and a replayed frame are refused, and netd
# serves its other links meanwhile; each refusal is of that connection
# only, and node4's own netd, back, links at its first attempts. Four nodes, so that node4's address
# can knock on three lower-numbered nodes, one refusal each.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"

lc_setup
trap netd_cleanup EXIT
OUT=$(mktemp -d /tmp/netd-auth.XXXXXX)
KEY=$OUT/authkey

check "o2ctl keygen writes a key" o2 1 keygen "$KEY"
check_eq "the key is private" "600" "$(stat -c %a "$KEY")"
expect_error "keygen never overwrites a key" "File exists" o2 1 keygen "$KEY"
check "a second, different key" o2 1 keygen "$OUT/wrongkey"

netd_up 4 || { fail "localcluster up 4"; finish; exit 1; }
for k in 1 2 3 4; do
	printf 'O2CB_AUTHKEY=%s\n' "$KEY" >>"$LOCALCLUSTER_DIR/node$k/o2cb"
	lc restart $k >/dev/null
done
for k in 1 2 3 4; do hb_start $k; done
check "all four nodes linked" wait_for 30 mesh_up 4
check "links are authenticated" bash -c "'$O2CTL' --rundir '$(rundir 1)' --json net-status | grep -q '\"node\":2,[^}]*\"authenticated\":true'"
check "netd logged the key" grep -q "links authenticated with the cluster key $KEY" "$LOCALCLUSTER_DIR/node1/log/netd.log"
for k in 1 2 3 4; do echo_start $k "$OUT/echo$k"; done
check "node4 -> node1: every size 0..8192 over MACs" o2 4 net-send 1 --sizes 0-8192 --window 256
check "node1 -> all" o2 1 net-send all --count 500

echo "-- node4's address without node4's netd"
kill -9 "$(netd_pid 4)"
check "node1 sees the link to node4 go" wait_for 10 link_is 1 4 down
HS=(--from "$(addr 4)" --from-node 4 --cluster lc --hb-write $HBW --idle 30000 --keepalive 2000)
logged() { grep -q "$2" "$LOCALCLUSTER_DIR/node$1/log/netd.log"; }
check "a peer without the key is refused" "$PEER" handshake "${HS[@]}" \
    --to "$(addr 1):$LOCALCLUSTER_PORT" --to-node 1
check "... logged" logged 1 "node 4 has no cluster key, but we use one"
check "a peer with a wrong key is refused" "$PEER" handshake "${HS[@]}" --keyfile "$OUT/wrongkey" \
    --to "$(addr 2):$LOCALCLUSTER_PORT" --to-node 2
check "... logged" logged 2 "node 4 does not prove that it knows the cluster key"
check "the right key gets a link, and a replayed frame closes it" "$PEER" replay "${HS[@]}" \
    --keyfile "$KEY" --to "$(addr 3):$LOCALCLUSTER_PORT" --to-node 3
check "... logged" logged 3 "replayed keepalive frame: sequence 1, last accepted 1"
check "node1 -> node2 -> node3 still talk" o2 1 net-send all --count 200
lc start 4 >/dev/null
check "node4's own netd links all three at its first attempts" wait_for 2 mesh_up 4
for k in 1 2; do
	check "node4 -> node$k, which refused a connection from its address" o2 4 net-send $k --count 200
done
for k in 1 2 3; do check "netd of node$k answers" o2 $k ping netd; done

bg_stop_all
rm -rf "$OUT"
finish
