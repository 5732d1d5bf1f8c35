#!/usr/bin/env bash
# hbd: how long after a kill -9 every survivor reports the node down, in
# heartbeat intervals (o2hb's floor is dead_threshold, its ceiling
# dead_threshold + 2), and our heartbeat write latency under load.
#   bench/hbd.sh [--kills N] [--load-seconds S]     (defaults 20 and 20)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
source "$TOP/tests/lib.sh"
source "$TOP/tests/integration/hbd_lib.inc"

KILLS=20
LOAD_SECONDS=20
N=5
source "$TOP/bench/options.inc"
bench_options "bench/hbd.sh [--kills N] [--load-seconds S]" kills load-seconds -- "$@"

export LOCALCLUSTER_DIR=/tmp/ocfs2-bench-hbd-$$
DIR=$LOCALCLUSTER_DIR
trap 'watch_stop_all; lc down >/dev/null 2>&1 || true' EXIT
lc up $N --hb-interval-ms $IVL --dead-threshold $THR >/dev/null || exit 1
for k in $(seq 1 $N); do hb_start $k >/dev/null || exit 1; done
ALL=$(seq -s ' ' 1 $N)
wait_for 10 live_is 1 "$ALL" || { echo "hbd bench: cluster did not come up"; exit 1; }
watch_start 1 "$DIR/watch1.json"

# median and max of the numbers on stdin
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "median %s, max %s", v[int((NR + 1) / 2)], v[NR] }'; }

: >"$DIR/delays"
for i in $(seq 1 "$KILLS"); do
	victim=$(( (i % (N - 1)) + 2 ))
	for k in $(seq 1 $N); do [[ $k -eq $victim ]] || watch_start $k "$DIR/w$i-$k.json"; done
	kill_ms=$(now_ms)
	lc kill $victim >/dev/null
	for k in $(seq 1 $N); do
		[[ $k -eq $victim ]] && continue
		wait_for 10 has_event "$DIR/w$i-$k.json" ".event==\"node-down\" and .node==$victim" || {
			echo "hbd bench: node$k never saw node$victim down"; exit 1; }
		t=$(jq .time_ms <<<"$(event "$DIR/w$i-$k.json" ".event==\"node-down\" and .node==$victim")")
		awk -v d=$((t - kill_ms)) -v i=$IVL 'BEGIN { printf "%.2f\n", d / i }' >>"$DIR/delays"
	done
	watch_stop_all
	lc start $victim >/dev/null && hb_start $victim >/dev/null
	wait_for 10 live_is 1 "$ALL" || { echo "hbd bench: node$victim did not rejoin"; exit 1; }
done
echo "kill -9 to node-down on every survivor ($KILLS kills x $((N - 1)) survivors," \
    "interval $IVL ms, dead_threshold $THR): $(stats <"$DIR/delays") intervals" \
    "(o2hb: between $THR and $((THR + 2)))"

watch_start 1 "$DIR/load.json"
stress-ng --cpu 2 --io 1 --hdd 1 --temp-path "$DIR" --timeout "${LOAD_SECONDS}s" --quiet
for k in $(seq 1 $N); do
	hb_status $k | jq -r '.regions[0] | "\(.write_latency_p50_us) \(.write_latency_p99_us) \(.write_latency_max_us)"'
done >"$DIR/lat"
echo "heartbeat write latency under stress-ng --cpu 2 --io 1 --hdd 1 (${LOAD_SECONDS}s, per node, us):" \
    "p50 $(awk '{print $1}' "$DIR/lat" | stats), p99 $(awk '{print $2}' "$DIR/lat" | stats)," \
    "worst $(awk '{print $3}' "$DIR/lat" | sort -n | tail -1)"
downs=$(grep -c node-down "$DIR/load.json")
echo "nodes declared dead under load: $downs"
[[ $downs -eq 0 ]]
