#!/usr/bin/env bash
# o2ctl status: each node's view of who is configured, heartbeating and
# linked, in the JSON shape of o2ctl --json status, before and after a
# node dies.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"
lc_setup
export LOCALCLUSTER_PORT=${LOCALCLUSTER_PORT:-7791}

# view K NODE FIELD: what node K's status says of NODE's FIELD.
view() {
	lc exec "$1" "$O2CTL" --json status | jq -r --arg n "$2" ".nodes[] | select(.name == \$n) | .$3"
}
view_is() { [[ $(view "$1" "$2" "$3") == "$4" ]]; }

check "3 nodes up" lc up 3 --hb-interval-ms $IVL --dead-threshold $THR
check_eq "before any heartbeat: node2 unseen" down "$(view 1 node2 heartbeat)"
check_eq "node1 is local" true "$(view 1 node1 local)"
check_eq "node1's link to itself" self "$(view 1 node1 link)"
for k in 1 2 3; do
	check "node$k heartbeats" hb_start "$k"
done
for n in node1 node2 node3; do
	check "node1 sees $n heartbeat up" wait_for 10 view_is 1 $n heartbeat up
done
for n in node2 node3; do
	check "node1 has a link to $n" wait_for 15 view_is 1 $n link up
done
check_eq "status names node numbers" 3 "$(view 1 node3 num)"
check_eq "status names the stack (o2cb by default)" o2cb "$(lc exec 1 "$O2CTL" --json status | jq -r .stack)"
check_eq "... and hbd as its membership daemon" true "$(lc exec 1 "$O2CTL" --json status | jq -r .daemons.hbd)"
check "the text form names the stack" sh -c "$(printf '%q ' "$LOCALCLUSTER" exec 2 "$O2CTL" status) | grep -q '^cluster lc (stack o2cb): nmd up, hbd up'"
json_nodes() { lc exec 1 "$O2CTL" "$@" | jq -c "[.nodes[] | del(.heartbeat, .link, .fence_pending)]"; }
check_eq "--json after the command, as before it" "$(json_nodes --json status)" "$(json_nodes status --json)"
check_eq "status shows each node as config does" "$(json_nodes --json config)" "$(json_nodes status --json)"
check_eq "no fence pending on o2cb (pcmk's)" "false false false" \
    "$(lc exec 1 "$O2CTL" --json status | jq -r '[.nodes[].fence_pending] | join(" ")')"
check_eq "... and no pcmk fencing method" "" "$(lc exec 1 "$O2CTL" --json status | jq -r .fencing)"
check "the text form lists every node" sh -c "$(printf '%q ' "$LOCALCLUSTER" exec 2 "$O2CTL" status) | grep -Ec '^  [0-9]+ +node[123] ' | grep -qx 3"

check "kill node3" lc kill 3
check "node1 sees node3's heartbeat down" wait_for 10 view_is 1 node3 heartbeat down
check "node1 sees node3's link down" wait_for 10 view_is 1 node3 link down
check_eq "node2 still linked" up "$(view 1 node2 link)"
expect_error "status of a node whose daemons are dead" "not running" \
    lc exec 3 "$O2CTL" status
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')"
finish
