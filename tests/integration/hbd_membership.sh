#!/usr/bin/env bash
# hbd on 8 nodes of one mkfs.ocfs2 image at a 200 ms interval: everybody
# sees everybody; a kill -9 is seen by every survivor after dead_threshold
# samples and no later than two intervals after that; the node comes back
# with a new generation; a clean stop is seen within one interval;
# debugfs.ocfs2 reads our blocks; events reach subscribers net first.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"

N=8
lc_setup
DIR=$LOCALCLUSTER_DIR
trap 'watch_stop_all; lc down >/dev/null 2>&1 || true' EXIT

check "8 nodes up" lc up $N --hb-interval-ms $IVL --dead-threshold $THR
IMAGE=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
ALL=$(seq -s ' ' 1 $N)

echo "-- every node heartbeats"
pids=()
for k in $(seq 1 $N); do
	hb_start "$k" >"$DIR/start$k.out" 2>&1 &
	pids+=($!)
done
ok=1
for p in "${pids[@]}"; do wait "$p" || ok=0; done
check "heartbeat start on every node reaches steady state" test $ok -eq 1
UUID=$(cat "$DIR/start1.out")
check "start prints the region UUID" grep -Eq '^[0-9A-F]{32}$' "$DIR/start1.out"
for k in $(seq 1 $N); do
	check "node$k sees nodes $ALL up" wait_for 10 live_is "$k" "$ALL"
done
check_eq "nmd has hbd's pid on the region" "$(lc exec 1 sh -c 'cat $OCFS2_RUNDIR/config/cluster/lc/heartbeat/'"$UUID"'/pid')" \
    "$(lc exec 1 "$O2CTL" ping hbd | awk '{print $3}')"
check "nodes seen up are pinned in nmd" \
    test "$(lc exec 1 "$O2CTL" --json config | jq '[.nodes[] | select(.pins > 0)] | length')" -eq $N
hb=$(debugfs.ocfs2 -R hb /dev/fd/3 3<"$IMAGE" 2>&1)
for k in $(seq 1 $N); do
	check "debugfs.ocfs2 hb lists node $k" grep -Eq "^[[:space:]]+$k:[[:space:]]+$k[[:space:]]" <<<"$hb"
done

echo "-- kill -9 of node5"
for k in $(seq 1 $N); do watch_start "$k" "$DIR/watch$k.json"; done
watch_start 1 "$DIR/net.json" --role net --ack-delay 300
watch_start 1 "$DIR/dlm.json" --role dlm
kill_ms=$(now_ms)
check "kill node5" lc kill 5
for k in $(seq 1 $N); do
	[[ $k -eq 5 ]] && continue
	f=$DIR/watch$k.json
	if ! wait_for $(( (THR + 5) * IVL / 1000 + 5 )) has_event "$f" '.event=="node-down" and .node==5'; then
		fail "node$k reports node5 down"
		continue
	fi
	ev=$(event "$f" '.event=="node-down" and .node==5')
	t=$(jq .time_ms <<<"$ev")
	lastc=$(jq .last_change_ms <<<"$ev")
	since=$((t - lastc))
	echo "   node$k: node5 down $((t - kill_ms)) ms after the kill, $since ms after its last change ($(jq -r .reason <<<"$ev"))"
	check "node$k: not before $THR intervals after node5's last write ($since ms)" \
	    test $since -ge $((THR * IVL - JITTER_MS))
	check "node$k: within $THR+2 intervals of node5's last write ($since ms)" \
	    test $since -le $(((THR + 1) * IVL + JITTER_MS))
	check "node$k: not before the kill" test "$t" -gt "$kill_ms"
done
gen_down=$(jq -r .generation <<<"$(event "$DIR/watch1.json" '.event=="node-down" and .node==5')")
check "survivors see nodes without 5" wait_for 5 live_is 1 "$(seq -s ' ' 1 4) $(seq -s ' ' 6 $N)"
check "node5 is unpinned" \
    test "$(lc exec 1 "$O2CTL" --json config | jq '.nodes[] | select(.name=="node5") | .pins')" -eq 0

echo "-- ordered delivery: net acks (after 300 ms) before dlm sees the event"
ev_net=$(event "$DIR/net.json" '.event=="node-down" and .node==5')
check "dlm subscriber got node5 down" wait_for 5 has_event "$DIR/dlm.json" '.event=="node-down" and .node==5'
ev_dlm=$(event "$DIR/dlm.json" '.event=="node-down" and .node==5')
if [[ -n $ev_net && -n $ev_dlm ]]; then
	gap=$(( $(jq .recv_ms <<<"$ev_dlm") - $(jq .recv_ms <<<"$ev_net") ))
	check "dlm got it at least 300 ms after net ($gap ms)" test $gap -ge 300
	check_eq "same event" "$(jq .seq <<<"$ev_net")" "$(jq .seq <<<"$ev_dlm")"
fi

echo "-- node5 restarts with a new generation"
check "start node5" lc start 5
check "node5 heartbeats again" hb_start 5
for k in $(seq 1 $N); do
	[[ $k -eq 5 ]] && continue
	check "node$k sees node5 up again" wait_for 5 has_event "$DIR/watch$k.json" '.event=="node-up" and .node==5'
done
gen_up=$(jq -r .generation <<<"$(event "$DIR/watch1.json" '.event=="node-up" and .node==5')")
check "new generation ($gen_down -> $gen_up)" test "$gen_up" != "$gen_down" -a -n "$gen_up"
check "node1 sees all up" wait_for 5 live_is 1 "$ALL"
watch_start 5 "$DIR/watch5.json"	# the old one died with node5

echo "-- clean stop of node3"
watch_start 3 "$DIR/self3.json"
check "heartbeat stop on node3" lc exec 3 sh -c '"$OCFS2_BUILD/o2ctl" heartbeat stop "$OCFS2_IMAGE"'
stopped=$(event "$DIR/self3.json" '.event=="region-stopped"')
check "node3 reports its region stopped" test -n "$stopped"
stop_ms=$(jq .time_ms <<<"${stopped:-{\"time_ms\":0\}}")
for k in 1 2 4 5 6 7 8; do
	f=$DIR/watch$k.json
	if ! wait_for 3 has_event "$f" '.event=="node-down" and .node==3'; then
		fail "node$k sees node3 leave"
		continue
	fi
	ev=$(event "$f" '.event=="node-down" and .node==3')
	d=$(( $(jq .time_ms <<<"$ev") - stop_ms ))
	check_eq "node$k: reason" "clean stop" "$(jq -r .reason <<<"$ev")"
	check "node$k: within one interval of the stop ($d ms)" test $d -le $((IVL + JITTER_MS))
done

watch_stop_all
lc down >/dev/null 2>&1
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMAGE"
finish
