#!/usr/bin/env bash
# A reload may remove a node only while it is dead: hbd pins every node
# it sees heartbeating, and nmd refuses to drop a pinned one, as configfs
# refuses the rmdir of an item in use.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"
lc_setup
export LOCALCLUSTER_PORT=${LOCALCLUSTER_PORT:-7790}

check "3 nodes up" lc up 3 --hb-interval-ms $IVL --dead-threshold $THR
for k in 1 2 3; do
	check "node$k heartbeats" hb_start "$k"
done
check "node1 sees all three" wait_for 10 live_is 1 "1 2 3"

CONF=$(lc conf)
cp "$CONF" "$CONF.orig"
# Drop node3's stanza and fix node_count.
awk 'BEGIN { RS = ""; ORS = "\n\n" } !/name = node3/' "$CONF.orig" |
    sed 's/node_count = 3/node_count = 2/' >"$CONF"

expect_error "reload refuses to remove a live node" "node node3: not removed: it is alive" \
    lc exec 1 "$O2CTL" reload
check "node3 is still in node1's tree" test -d "$(lc rundir 1)/config/cluster/lc/node/node3"
expect_error "rmdir of the live node is refused" "Device or resource busy" \
    rmdir "$(lc rundir 1)/config/cluster/lc/node/node3"

check "kill node3" lc kill 3
check "node1 sees node3 dead" wait_for 10 live_is 1 "1 2"
out=$(lc exec 1 "$O2CTL" reload 2>&1)
check "reload now removes it" grep -q "applied: node node3 removed" <<<"$out"
check "node3 is gone from node1's tree" test ! -e "$(lc rundir 1)/config/cluster/lc/node/node3"
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')"
finish
