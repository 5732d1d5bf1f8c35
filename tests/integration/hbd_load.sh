#!/usr/bin/env bash
# Under load: 4 nodes at a 200 ms interval and threshold 10 while
# stress-ng saturates both CPUs and the disk for 30 s (HBD_LOAD_SECONDS); no node may ever
# be declared dead, and none may fence.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"

N=4
STRESS_S=${HBD_LOAD_SECONDS:-30}
lc_setup
DIR=$LOCALCLUSTER_DIR
trap 'watch_stop_all; lc down >/dev/null 2>&1 || true' EXIT

check "$N nodes up" lc up $N --hb-interval-ms $IVL --dead-threshold $THR
IMAGE=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
for k in $(seq 1 $N); do check "node$k heartbeats" hb_start $k; done
ALL=$(seq -s ' ' 1 $N)
for k in $(seq 1 $N); do check "node$k sees $ALL" wait_for 10 live_is $k "$ALL"; done
for k in $(seq 1 $N); do watch_start $k "$DIR/watch$k.json"; done

echo "-- stress-ng --cpu 2 --io 1 --hdd 1 for ${STRESS_S}s"
check "stress-ng ran" stress-ng --cpu 2 --io 1 --hdd 1 --temp-path "$DIR" \
    --timeout "${STRESS_S}s" --quiet
for k in $(seq 1 $N); do
	check_eq "node$k: no node declared dead, nobody fenced" "" \
	    "$(event "$DIR/watch$k.json" '.event=="node-down" or .event=="fenced"')"
	check_eq "node$k still sees $ALL" "$ALL" "$(live_nodes $k)"
	hb_status $k | jq -r '.regions[0] | "   node'$k': \(.writes) writes, latency p50 \(.write_latency_p50_us) us, p99 \(.write_latency_p99_us) us, worst \(.write_latency_max_us) us, \(.iterations_skipped) samples skipped; most missed samples of a peer: \([.nodes[].missed_total] | max)"'
done

watch_stop_all
lc down >/dev/null 2>&1
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMAGE"
finish
