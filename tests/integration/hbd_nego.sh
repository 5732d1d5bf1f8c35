#!/usr/bin/env bash
# o2hb's write-timeout negotiation through netd. Every node's I/O goes
# through the LD_PRELOAD fault shim, each with its own control file.
#
#  - The shared storage stalls for every node at once (reads and writes,
#    each I/O 3 s: an iteration takes 6 s, over three 1.8 s write
#    timeouts): nobody fences, because the master (node 1) approves every
#    round of NEGO_TIMEOUTs; and nobody is declared dead, because a node
#    whose disk hangs completes no read either, so it takes no sample at
#    all (o2hb's thread reads, writes and waits in turn, and so does ours).
#  - Writes alone stall for everyone: the same, since each node's next
#    read waits behind its own hung write.
#  - One node's storage alone stalls, the master's and then another's:
#    it gets no approval (nobody else asks) and fences itself before its
#    peers declare it dead; the others neither fence nor time out.
#  - Without netd, a stall for everyone fences everyone, as before the
#    negotiation existed: hbd works without netd, only without this.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"

lc_setup
DIR=$LOCALCLUSTER_DIR
trap 'watch_stop_all; lc down >/dev/null 2>&1 || true' EXIT
STALL_MS=3000			# each stalled pread/pwrite
WTO_MS=$((IVL * (THR - 1)))	# write timeout: 1800 ms

check "3 nodes up" lc up 3 --hb-interval-ms $IVL --dead-threshold $THR
IMAGE=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
for k in 1 2 3; do
	: >"$DIR/iofault$k.ctl"
	lc stop $k >/dev/null
	LD_PRELOAD=$BUILD/tests/libiofault.so IOFAULT_PATH=$IMAGE \
	    IOFAULT_CTL=$DIR/iofault$k.ctl lc start $k >/dev/null
done
for k in 1 2 3; do check "node$k heartbeats" hb_start $k; done
for k in 1 2 3; do check "node$k sees 1 2 3" wait_for 10 live_is $k "1 2 3"; done
# hbd is netd's client: its two handlers of the region are there.
for k in 1 2 3; do
	check "node$k: hbd registered NEGO_TIMEOUT and NEGO_APPROVE with netd" \
	    wait_for 5 sh -c "$(printf '%q ' "$LOCALCLUSTER" exec $k "$O2CTL" --json net-status) | jq -e '.handlers >= 2'"
	# netd learns of the nodes from hbd; the negotiation needs the links.
	check "node$k: netd's links to the other nodes are up" \
	    wait_for 15 sh -c "$(printf '%q ' "$LOCALCLUSTER" exec $k "$O2CTL" --json net-status) | jq -e '[.links[] | select(.link == \"up\")] | length == 2'"
done

# fault K TEXT: node K's shim reads TEXT from now on (atomically).
fault() {
	printf '%s\n' "$2" >"$DIR/iofault$1.ctl.new"
	mv "$DIR/iofault$1.ctl.new" "$DIR/iofault$1.ctl"
}

# log_count K TEXT: lines of node K's hbd log containing TEXT.
log_count() {
	grep -c -- "$2" "$DIR/node$1/log/hbd.log" || true
}

# writes K: node K's completed heartbeat writes.
writes() {
	hb_status "$1" | jq '.regions[0].writes'
}

# Node K wrote at least twice more than $2 times: its I/O flows again.
writes_past() {
	(( $(writes "$1") >= $2 + 2 ))
}

# missed K: unchanged samples node K has taken of its live peers, in all.
missed() {
	hb_status "$1" | jq '[.regions[0].nodes[] | select(.state == "up") | .missed_total] | add'
}

# stall_all NAME FAULT SECONDS: every node's storage stalls at once.
stall_all() {
	local name=$1 flt=$2 secs=$3 k ev before=() missed0=() approvals asks
	for k in 1 2 3; do watch_start $k "$DIR/$name$k.json"; done
	for k in 1 2 3; do before[$k]=$(writes $k); missed0[$k]=$(missed $k); done
	approvals=$(log_count 1 "approving the write timeout")
	asks=$(( $(log_count 2 "negotiating the timeout with node 1") + $(log_count 3 "negotiating the timeout with node 1") ))
	for k in 1 2 3; do fault $k "$flt"; done
	sleep "$secs"
	for k in 1 2 3; do fault $k ""; done
	for k in 1 2 3; do
		check "$name: node$k's I/O flows again" wait_for $((2 * STALL_MS / 1000 + 5)) writes_past $k "${before[$k]}"
	done
	sleep $((2 * IVL * THR / 1000 + 1))	# longer than any node would take to die
	for k in 1 2 3; do
		check_eq "$name: node$k did not fence" false "$(hb_status $k | jq .fenced)"
		check_eq "$name: node$k still sees 1 2 3" "1 2 3" "$(live_nodes $k)"
		ev=$(event "$DIR/$name$k.json" '.event=="fenced" or .event=="node-down"')
		check_eq "$name: node$k: no fence and no node-down event" "" "$ev"
		echo "   node$k: worst heartbeat write $(( $(hb_status $k | jq '.regions[0].write_latency_max_us') / 1000 )) ms (write timeout $WTO_MS ms); $(( $(missed $k) - missed0[k] )) unchanged samples of its peers in all (dead after $THR in a row)"
	done
	approvals=$(( $(log_count 1 "approving the write timeout") - approvals ))
	asks=$(( $(log_count 2 "negotiating the timeout with node 1") + $(log_count 3 "negotiating the timeout with node 1") - asks ))
	echo "   $secs s stalled: node1 approved $approvals times; nodes 2 and 3 asked $asks times"
	check "$name: the master (node1) approved the write timeout" test "$approvals" -ge 2
	for k in 2 3; do
		check "$name: node$k's write timeout was approved" \
		    grep -q "approved the heartbeat write timeout" "$DIR/node$k/log/hbd.log"
	done
	watch_stop_all
}

stall_all all "pread delay $STALL_MS
pwrite delay $STALL_MS" 8
stall_all writes "pwrite delay $STALL_MS" 8

# stall_one NAME K: node K's storage alone stalls; it must fence before
# the others declare it dead, and they must not fence.
stall_one() {
	local name=$1 v=$2 k ev fenced_ms down_ms others=() live approvals
	for k in 1 2 3; do
		watch_start $k "$DIR/$name$k.json"
		((k == v)) || others+=("$k")
	done
	approvals=$(log_count 1 "approving the write timeout")
	fault "$v" "pread delay $STALL_MS
pwrite delay $STALL_MS"
	check "$name: node$v fences itself" wait_for $(( (THR + 5) * IVL / 1000 + 3 )) \
	    has_event "$DIR/$name$v.json" '.event=="fenced"'
	ev=$(event "$DIR/$name$v.json" '.event=="fenced"')
	[[ -n $ev ]] || return
	fenced_ms=$(jq .time_ms <<<"$ev")
	echo "   node$v: $(jq -r .reason <<<"$ev")"
	for k in "${others[@]}"; do
		if ! wait_for $(( (THR + 5) * IVL / 1000 + 3 )) has_event "$DIR/$name$k.json" ".event==\"node-down\" and .node==$v"; then
			fail "$name: node$k declares node$v dead"
			continue
		fi
		down_ms=$(jq .time_ms <<<"$(event "$DIR/$name$k.json" ".event==\"node-down\" and .node==$v")")
		check "$name: node$v fenced before node$k declared it dead ($((down_ms - fenced_ms)) ms before)" \
		    test "$fenced_ms" -lt "$down_ms"
		check_eq "$name: node$k did not fence" false "$(hb_status $k | jq .fenced)"
		check_eq "$name: node$k: no fence event" "" "$(event "$DIR/$name$k.json" '.event=="fenced"')"
	done
	check_eq "$name: node1 approved nothing" "$approvals" \
	    "$(log_count 1 "approving the write timeout")"
	check "$name: node$v's write hung (logged)" grep -q "node $v's heartbeat write to .* hung" \
	    "$DIR/node$v/log/hbd.log"
	live=$(printf '%s ' "${others[@]}")
	check_eq "$name: node${others[0]} sees ${live% } live" "${live% }" "$(live_nodes "${others[0]}")"
	fault "$v" ""
	check "$name: o2ctl clear-fence on node$v (once its stalled I/O is over)" \
	    wait_for 10 lc exec $v "$O2CTL" clear-fence
	check "$name: node$v rejoins" wait_for 10 live_is 1 "1 2 3"
	check "$name: node$v's region is steady again" \
	    wait_for 10 sh -c "$(printf '%q ' "$LOCALCLUSTER" exec $v "$O2CTL" --json heartbeat) | jq -e '.regions[0].state == \"steady\"'"
	watch_stop_all
}

stall_one master 1
stall_one other 2
check "other: node2 asked the master (node1), which did not approve" \
    grep -q "node 2 asks to negotiate" "$DIR/node1/log/hbd.log"

# Without netd, nothing is negotiated: a stall for everyone fences everyone.
for k in 1 2 3; do
	kill "$(cat "$DIR/node$k/pids/netd.pid")"
	check "node$k: hbd notices netd is gone" wait_for 5 \
	    grep -q "lost netd" "$DIR/node$k/log/hbd.log"
	watch_start $k "$DIR/nonetd$k.json"
done
for k in 1 2 3; do fault $k "pread delay $STALL_MS
pwrite delay $STALL_MS"; done
for k in 1 2 3; do
	check "no netd: node$k fences" wait_for $(( (THR + 5) * IVL / 1000 + 3 )) \
	    has_event "$DIR/nonetd$k.json" '.event=="fenced"'
done
for k in 1 2 3; do fault $k ""; done
watch_stop_all

lc down >/dev/null 2>&1
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMAGE"
finish
