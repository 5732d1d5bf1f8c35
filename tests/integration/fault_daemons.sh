#!/usr/bin/env bash
# Faults injected into one node's daemons while every node writes: three
# nodes (each in its own network namespace, 200 ms heartbeat), all
# mounted, each running tests/progs/ackwriter, which appends fsync'ed
# records to its own file and to a shared one and logs, outside the
# volume, every record whose fsync returned 0. Each round injects one fault
# on a random node at a random moment: SIGKILL of nmd, hbd, netd, dlmd or
# fsd with or without its restart (as systemd's Restart= would; fsd is
# mounted again), the whole node killed, the node cut off by a network
# partition, hbd stopped (SIGSTOP) beyond the dead threshold or within it,
# or two daemons of the node at once (doc/daemon-failures.md's pairs).
# Once the cluster settles, every node still mounted must read every
# acknowledged record of every writer, whole and intact; no two nodes may
# own the same slot, in their own view or in the slot map on disk; the
# other nodes keep their mounts and write on. The node hit is then brought
# back whole (crashed and restarted if it is not) for the next round. At
# the end every node unmounts, the records are read from the image too,
# no slot is left taken and fsck.ocfs2 -fn is clean.
#
# The schedule is reproducible: FAULT_SEED (printed at the start) seeds
# every random choice. FAULT_ROUNDS=0 (the default, CI's) runs each kind of
# CI_KINDS once, in an order drawn from the seed; FAULT_ROUNDS=N runs N
# rounds, each kind once first, then kinds drawn at random (make soak).
# FAULT_KINDS="hbd-kill nmd-restart" limits the kinds to those (and is
# the only way to run OPEN_KINDS). Pair kinds kill two daemons of one node
# together (A+B-kill, A+B-restart, hbd-stop+B: see inject_pair). The
# schedule stops after the first round whose checks fail: the volume may
# be damaged, and the rounds after it would not say anything more.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

N=3
ALL_KINDS=(nmd-kill nmd-restart hbd-kill hbd-restart netd-kill netd-restart
	dlmd-kill dlmd-restart fsd-kill fsd-restart node-kill partition
	hbd-stop-long hbd-stop-short
	hbd+dlmd-kill hbd+dlmd-restart dlmd+hbd-kill dlmd+hbd-restart
	hbd-stop+dlmd-kill hbd-stop+dlmd-restart nmd+hbd-kill nmd+hbd-restart
	netd+dlmd-kill netd+dlmd-restart fsd+dlmd-kill fsd+dlmd-restart
	hbd+fsd-kill hbd+fsd-restart)
# CI's schedule: every daemon at least once, and hbd and dlmd dying
# together, in about 80 s.
CI_KINDS=(nmd-restart hbd-kill netd-restart dlmd-kill fsd-restart hbd+dlmd-restart)
# Kinds left out of the schedules while what they find is open
# (doc/daemon-failures.md, Open): FAULT_KINDS runs them.
OPEN_KINDS=()
SEED=${FAULT_SEED:-$(((RANDOM << 15) | RANDOM))}
ROUNDS=${FAULT_ROUNDS:-0}
read -r -a KINDS <<<"${FAULT_KINDS:-}"
OBSERVE_S=6	# how long a node's fault may take to be seen by the others
SETTLE_S=15	# for a restarted daemon to be back in the cluster
PROGRESS_S=20	# for a writer to acknowledge again after a fault
ACKW=$BUILD/progs/ackwriter
ACKS=$FSD_DIR/acks
mkdir -p "$ACKS"
WRITERS=()
M=()

for k in "${KINDS[@]}"; do
	[[ " ${ALL_KINDS[*]} " == *" $k "* ]] || { echo "FAULT_KINDS: no kind '$k' (kinds: ${ALL_KINDS[*]})"; exit 2; }
done
[[ $ROUNDS =~ ^[0-9]+$ && $SEED =~ ^[0-9]+$ ]] || { echo "FAULT_ROUNDS and FAULT_SEED are numbers"; exit 2; }

abort_mounts() {
	local k
	for ((k = 1; k <= N; k++)); do abort_mount "$k"; done
}
# mount_node K: localcluster mount, and its FUSE device noted.
mount_node() {
	timeout 60 "$LOCALCLUSTER" mount "$1" >/dev/null || return 1
	note_dev "$1"
}
# bounded SECS CMD...: CMD, given up (status 124, left to end once the
# mounts are aborted) if it has not finished in SECS.
bounded() {
	local deadline=$((SECONDS + $1)) p
	shift
	"$@" &
	p=$!
	while kill -0 "$p" 2>/dev/null; do
		((SECONDS < deadline)) || return 124
		sleep 0.05
	done
	wait "$p"
}
none_alive() {
	local p
	for p in "$@"; do ! kill -0 "$p" 2>/dev/null || return 1; done
}
# stop_writers: each stops; fails when one was stuck on a hung mount.
stop_writers() {
	local p stuck=0
	((${#WRITERS[@]})) || return 0
	kill -TERM "${WRITERS[@]}" 2>/dev/null
	if ! wait_for 10 none_alive "${WRITERS[@]}"; then
		stuck=1
		kill -KILL "${WRITERS[@]}" 2>/dev/null
		wait_for 5 none_alive "${WRITERS[@]}" || abort_mounts
	fi
	for p in "${WRITERS[@]}"; do wait "$p" 2>/dev/null; done
	WRITERS=()
	return $stuck
}
# After a failure the acknowledgement logs are kept too (the test's
# directory goes), to compare with the daemons' logs.
KEEP_ACKS=/tmp/$TEST_NAME-failed-acks
rm -rf "$KEEP_ACKS"
keep_acks() { ((FAILED == 0)) || cp -r "$ACKS" "$KEEP_ACKS"; }
lc_setup
trap 'stop_writers; keep_acks; cluster_cleanup $N fsd hbd netd dlmd nmd' EXIT

# ------------------------------------------------------------ randomness

# Every draw in this shell (never in $(...)), so that the seed decides all.
RANDOM=$SEED
# draw MIN MAX: R gets a number in MIN..MAX.
draw() { R=$(($1 + RANDOM % ($2 - $1 + 1))); }
msleep() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

# ------------------------------------------------------------ the nodes

pid_of() { cat "$LOCALCLUSTER_DIR/node$1/pids/$2.pid" 2>/dev/null; }
running() { local p; p=$(pid_of "$1" "$2") && kill -0 "$p" 2>/dev/null; }
now_ms() { date +%s%3N; }
others() { local j; for ((j = 1; j <= N; j++)); do ((j == $1)) || printf '%s ' "$j"; done; }
mounts_of() { timeout 5 "$O2CTL" --rundir "$(rundir "$1")" --json mounts; }
# mounted K: node K's fsd runs and its mount answers.
mounted() { running "$1" fsd && bounded 5 stat "${M[$1]}/faults" >/dev/null 2>&1; }
# sees_dead J K: node J's hbd no longer sees node K heartbeat.
sees_dead() {
	o2 "$1" --json status 2>/dev/null | jq -e --argjson k "$2" '.nodes[] | select(.num == $k) | .heartbeat != "up"' >/dev/null
}
# recoveries K...: the slots these nodes' fsd recovered, summed.
recoveries() {
	local j n=0 r
	for j in "$@"; do
		r=$(mounts_of "$j" 2>/dev/null | jq '.[0].recoveries // 0' 2>/dev/null)
		n=$((n + ${r:-0}))
	done
	printf '%d' "$n"
}
# healthy K: every daemon of node K runs, it is not fenced, sees and links
# every other node, and its mount answers with a slot.
healthy() {
	local d
	for d in nmd hbd netd dlmd fsd; do running "$1" "$d" || return 1; done
	status_linked "$1" "$N" >/dev/null 2>&1 || return 1
	mounted "$1" || return 1
	mounts_of "$1" | jq -e '.[0].state == "mounted" and .[0].slot >= 0' >/dev/null 2>&1
}
all_healthy() { local j; for ((j = 1; j <= N; j++)); do healthy "$j" || return 1; done; }
acked() { cat "$ACKS"/ack.node* 2>/dev/null | grep -c '^A '; }
acked_by() { grep -c '^A ' "$ACKS/ack.node$1" 2>/dev/null; }
# writes_on K SINCE: node K's writer acknowledged more than SINCE records.
writes_on() { (($(acked_by "$1") > $2)); }

start_writer() {
	"$ACKW" write "$1" "$N" "${M[$1]}/faults" "$ACKS/ack.node$1" 2>>"$FSD_DIR/writers.log" &
	WRITERS+=($!)
}

# bring_back K: node K whole again: if it is not, crash what is left of
# it, wait until the others see it dead, start its daemons, clear a fence
# and mount. Prints what it did.
bring_back() {
	local k=$1 j
	all_healthy && return 0
	echo "   node$k is not whole again by itself: crashing and restarting it"
	lc kill "$k" >/dev/null 2>&1
	for j in $(others "$k"); do
		wait_for 30 sees_dead "$j" "$k" || { echo "   node$j still sees node$k heartbeat"; return 1; }
	done
	lc start "$k" >/dev/null || return 1
	o2 "$k" clear-fence >/dev/null 2>&1
	mount_node "$k" || return 1
	wait_for 30 all_healthy
}

# ------------------------------------------------------------ the checks

# check_records WHEN NODE...: every acknowledged record on each node's
# view (NODE "image": the files copied from the image). Sets LOST (records
# some node lost) and adds the reads made to READS.
LOST=0
READS=0
check_records() {
	local when=$1 out line dirs=() j checked
	shift
	for j in "$@"; do
		if [[ $j == image ]]; then dirs+=("$FSD_DIR/disk/faults"); else dirs+=("${M[$j]}/faults"); fi
	done
	LOST=0
	if ((${#dirs[@]} == 0)); then
		fail "$when: no node is mounted to read the records"
		return
	fi
	# The writers pause while their files are read: a reader on a node
	# whose own writer appends to the file meanwhile may get a stale end
	# of file (doc/daemon-failures.md, Open), which is not what this
	# checks.
	((${#WRITERS[@]})) && kill -STOP "${WRITERS[@]}" 2>/dev/null
	bounded 30 "$ACKW" check "$N" "$ACKS" "${dirs[@]}" >"$FSD_DIR/check.out" 2>&1
	((${#WRITERS[@]})) && kill -CONT "${WRITERS[@]}" 2>/dev/null
	out=$(<"$FSD_DIR/check.out")
	line=$(grep '^ackcheck:' <<<"$out")
	if [[ -z $line ]]; then
		fail "$when: reading the records on nodes $* did not finish in 30 s (their mounts are aborted)"
		abort_mounts
		return
	fi
	read -r _ _ _ _ checked _ LOST _ _ <<<"$line"
	READS=$((READS + checked))
	if grep -q ' lost 0 unreadable 0$' <<<"$line"; then
		pass "$when: every acknowledged record intact on nodes $* (${line#ackcheck: })"
	else
		fail "$when: acknowledged records lost (${line#ackcheck: })"
		grep -v '^ackcheck:' <<<"$out" | grep -v ', 0 lost$' | head -n 24 | sed 's/^/       | /'
	fi
}

# slots_unique NODE...: each node's own slot, and the map on disk, agree;
# no slot is owned twice.
slots_unique() {
	local j slot map owner bad=0
	local -A mine=()
	map=$(debugfs.ocfs2 -R slotmap "$IMG" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { print $1, $2 }')
	if [[ $(awk '{ print $2 }' <<<"$map" | sort | uniq -d) ]]; then
		echo "a node owns two slots on disk: $(tr '\n' ';' <<<"$map")"
		bad=1
	fi
	for j in "$@"; do
		slot=$(mounts_of "$j" | jq -er '.[0].slot') || { echo "node$j's fsd does not say its slot"; bad=1; continue; }
		if [[ -n ${mine[$slot]:-} ]]; then
			echo "node${mine[$slot]} and node$j both own slot $slot"
			bad=1
		fi
		mine[$slot]=$j
		owner=$(awk -v s="$slot" '$1 == s { print $2 }' <<<"$map")
		if [[ $owner != "$j" ]]; then
			echo "node$j owns slot $slot; on disk its owner is ${owner:-nobody}"
			bad=1
		fi
	done
	return $bad
}

# ------------------------------------------------------------ the faults

fsd_gone() { ! running "$1" fsd; }
dlmd_gone() { ! running "$1" dlmd; }
# restart_pair K D...: the daemons D of node K back, in that order, then
# any other that exited meanwhile (dlmd does when fsd dies holding locks),
# as systemd would restart each; then a mount, if the node's fsd went
# (with its lock manager, or itself).
restart_pair() {
	local k=$1 d
	shift
	for d in "$@"; do
		[[ $d == fsd ]] || lc start "$k" "$d" >/dev/null
	done
	lc start "$k" >/dev/null
	[[ " $* " == *" dlmd "* || " $* " == *" fsd "* ]] || return 0
	wait_for 5 fsd_gone "$k" && mount_node "$k"
}

# inject_pair KIND K: two daemons of node K die together. A+B-kill: A is
# killed, then B while A is away (within 0.3 s); A+B-restart: the same,
# then B is restarted first, while A is still away, then A (for
# hbd+dlmd: dlmd back before hbd; dlmd+hbd: hbd back first).
# hbd-stop+B: hbd is stopped (SIGSTOP), B killed (and restarted), and hbd
# continued within half the dead threshold.
inject_pair() {
	local kind=$1 k=$2 first second restart=0 t0
	[[ $kind == *-restart ]] && restart=1
	first=${kind%%+*}
	second=${kind#*+}
	second=${second%-*}
	if [[ $first == hbd-stop ]]; then
		t0=$(now_ms)
		kill -STOP "$(pid_of "$k" hbd)"
		draw 50 300
		msleep "$R"
		kill -KILL "$(pid_of "$k" "$second")"
		((restart)) && lc start "$k" "$second" >/dev/null
		t0=$((t0 + IVL * THR / 2 - $(now_ms)))
		((t0 > 0)) && msleep "$t0"
		kill -CONT "$(pid_of "$k" hbd)"
		((restart)) && { wait_for 5 fsd_gone "$k" && mount_node "$k"; }
		return 0
	fi
	kill -KILL "$(pid_of "$k" "$first")"
	draw 0 300
	msleep "$R"
	kill -KILL "$(pid_of "$k" "$second")"
	((restart)) || return 0
	draw 100 1000
	msleep "$R"
	restart_pair "$k" "$second" "$first"
}

# inject KIND K: the fault, then what follows it until the cluster settles.
inject() {
	local kind=$1 k=$2 d
	case $kind in
	*+*)
		inject_pair "$kind" "$k"
		;;
	*-kill | *-restart)
		d=${kind%-*}
		[[ $d == node ]] && { lc kill "$k" >/dev/null; return; }
		kill -KILL "$(pid_of "$k" "$d")"
		# A killed fsd may be stuck in the kernel on its own mount's
		# pages: its guardian aborts the connection, and it ends.
		[[ $d == fsd ]] && check "node$k's killed fsd ends within 5 s" wait_for 5 fsd_gone "$k"
		if [[ $kind == *-restart ]]; then
			draw 100 1000
			msleep "$R"
			if [[ $d == fsd ]]; then
				# its dlmd exits (fsd died holding its journal's
				# locks): started again, as systemd would
				wait_for 5 dlmd_gone "$k"
				lc start "$k" >/dev/null
				mount_node "$k"
			else
				lc start "$k" >/dev/null
			fi
		fi
		;;
	partition)
		for d in $(others "$k"); do lc cut "$k" "$d" >/dev/null; done
		;;
	hbd-stop-long | hbd-stop-short)
		kill -STOP "$(pid_of "$k" hbd)"
		# Beyond the dead threshold (IVL * THR), or half of it.
		if [[ $kind == hbd-stop-long ]]; then msleep $((IVL * THR + 2000)); else msleep $((IVL * THR / 2)); fi
		kill -CONT "$(pid_of "$k" hbd)"
		;;
	esac
}

# settle KIND K RECOVERED: until the cluster is steady again. After a
# restart or a short stall, the node should be whole again; after the
# others may have seen it die, wait until they did and recovered its slot
# (up to OBSERVE_S), then a little more: whatever the node still does
# then is what a survivor's recovery must not lose.
settle() {
	local kind=$1 k=$2 before=$3 deadline j dead=0
	case $kind in
	*-restart | hbd-stop-short)
		wait_for "$SETTLE_S" all_healthy || echo "   the cluster is not whole after $SETTLE_S s"
		return
		;;
	esac
	deadline=$((SECONDS + OBSERVE_S))
	while ((SECONDS < deadline)); do
		dead=1
		for j in $(others "$k"); do sees_dead "$j" "$k" || dead=0; done
		((dead)) && (($(recoveries $(others "$k")) > before)) && break
		sleep 0.2
	done
	((dead)) && echo "   the others saw node$k die and recovered its slot"
	sleep 2
	if [[ $kind == partition ]]; then
		for j in $(others "$k"); do lc heal "$k" "$j" >/dev/null; done
	fi
}

# ------------------------------------------------------------ the schedule

schedule() {
	local pool=("${KINDS[@]}") i t
	if ((${#pool[@]} == 0 && ROUNDS == 0)); then
		pool=("${CI_KINDS[@]}")
	elif ((${#pool[@]} == 0)); then
		for t in "${ALL_KINDS[@]}"; do
			[[ " ${OPEN_KINDS[*]} " == *" $t "* ]] || pool+=("$t")
		done
	fi
	# A shuffle of the pool (Fisher-Yates), then random kinds after it.
	for ((i = ${#pool[@]} - 1; i > 0; i--)); do
		draw 0 "$i"
		t=${pool[i]} pool[i]=${pool[R]} pool[R]=$t
	done
	SCHEDULE=()
	for ((i = 0; i < (ROUNDS ? ROUNDS : ${#pool[@]}); i++)); do
		if ((i < ${#pool[@]})); then
			SCHEDULE+=("${pool[i]}")
		else
			draw 0 $((${#pool[@]} - 1))
			SCHEDULE+=("${pool[R]}")
		fi
	done
	for i in "${!SCHEDULE[@]}"; do
		draw 1 "$N"
		NODES[i]=$R
		draw 200 1500
		DELAYS[i]=$R
	done
}

SCHEDULE=()
NODES=()
DELAYS=()
schedule
echo "fault_daemons: seed $SEED (FAULT_SEED=$SEED to repeat), ${#SCHEDULE[@]} rounds: ${SCHEDULE[*]}"
((${#KINDS[@]} || ${#OPEN_KINDS[@]} == 0)) || echo "fault_daemons: left out while open: ${OPEN_KINDS[*]}"

echo "-- setup: three nodes in three namespaces, all mounted, all writing"
if ! lc up "$N" --netns --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up $N --netns"; finish; exit 1
fi
# A cut link counts as lost after 1 s, not 30 (as fsd_partition.sh).
for ((k = 1; k <= N; k++)); do
	o2 "$k" set cluster/lc/keepalive_delay_ms 300 >/dev/null
	o2 "$k" set cluster/lc/idle_timeout_ms 1000 >/dev/null
	printf 'O2CB_IDLE_TIMEOUT_MS=1000\nO2CB_KEEPALIVE_DELAY_MS=300\n' >>"$LOCALCLUSTER_DIR/node$k/o2cb"
done
for ((k = 1; k <= N; k++)); do run_check "node$k mounts the volume" node_mount "$k" && note_dev "$k"; done
check "every node links the others" wait_for 30 mesh_up "$N"
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
mkdir -p "${M[1]}/faults"
for ((k = 1; k <= N; k++)); do start_writer "$k"; done
check "every writer acknowledges records" wait_for 10 sh -c "for k in $(seq -s ' ' 1 $N); do grep -q '^A ' '$ACKS'/ack.node\$k || exit 1; done"

declare -A F_COUNT=() F_ACKED=() F_LOST=() F_FAILED=()
faults=0
lost_before=0
for i in "${!SCHEDULE[@]}"; do
	kind=${SCHEDULE[i]} k=${NODES[i]}
	failed_before=$FAILED
	msleep "${DELAYS[i]}"
	acked_at_start=$(acked)
	rec_before=$(recoveries $(others "$k"))
	echo "-- round $((i + 1)): $kind on node$k at $(now_ms) ms"
	inject "$kind" "$k"
	faults=$((faults + 1))
	settle "$kind" "$k" "$rec_before"

	survivors=()
	for j in $(others "$k"); do
		if mounted "$j"; then survivors+=("$j"); else fail "node$j keeps its mount through node$k's $kind"; fi
	done
	readers=("${survivors[@]}")
	if mounted "$k"; then
		readers+=("$k")
	elif running "$k" fsd; then
		fail "node$k's fsd runs but its mount does not answer"
	fi
	check_records "after $kind on node$k" "${readers[@]}"
	check "no two nodes own the same slot (nodes ${readers[*]}; the map on disk)" slots_unique "${readers[@]}"
	for j in "${survivors[@]}"; do
		check "node$j's writer acknowledges records again" wait_for "$PROGRESS_S" writes_on "$j" "$(acked_by "$j")"
	done

	F_COUNT[$kind]=$((${F_COUNT[$kind]:-0} + 1))
	F_ACKED[$kind]=$((${F_ACKED[$kind]:-0} + $(acked) - acked_at_start))
	((LOST > lost_before)) && F_LOST[$kind]=$((${F_LOST[$kind]:-0} + LOST - lost_before))
	((LOST > lost_before)) && lost_before=$LOST
	F_FAILED[$kind]=$((${F_FAILED[$kind]:-0} + FAILED - failed_before))
	if ((FAILED > failed_before)); then
		echo "-- stopping the schedule after round $((i + 1)) ($kind on node$k): the volume may be damaged"
		break
	fi
	run_check "node$k is whole again" bring_back "$k" || break
done

echo "-- the end: writers stop, every node reads everything, unmounts; the image is read and checked"
run_check "every writer stops (none stuck on a hung mount)" stop_writers
readers=()
for ((j = 1; j <= N; j++)); do mounted "$j" && readers+=("$j"); done
check_records "at the end" "${readers[@]}"
for ((j = 1; j <= N; j++)); do check "node$j unmounts" lc umount "$j"; done
mkdir -p "$FSD_DIR/disk"
check "the files are read from the image (debugfs.ocfs2 rdump)" \
    debugfs.ocfs2 -R "rdump /faults $FSD_DIR/disk" "$IMG"
FINAL_LOST=$LOST
check_records "on the image" image
((LOST > FINAL_LOST)) && FINAL_LOST=$LOST
check "no slot is left taken" sh -c "! debugfs.ocfs2 -R slotmap '$IMG' 2>/dev/null | grep -qE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+'"
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"

echo "-- figures (seed $SEED)"
printf '   %-22s %6s %9s %6s %7s\n' kind faults acked lost failed
for kind in "${ALL_KINDS[@]}"; do
	[[ -n ${F_COUNT[$kind]:-} ]] || continue
	printf '   %-22s %6d %9d %6d %7d\n' "$kind" "${F_COUNT[$kind]}" "${F_ACKED[$kind]}" \
	    "${F_LOST[$kind]:-0}" "${F_FAILED[$kind]}"
done
printf '   faults injected %d; records acknowledged (each checked) %d; reads of them on the nodes and the image %d; records lost %d\n' \
    "$faults" "$(acked)" "$READS" "$FINAL_LOST"
check_eq "no acknowledged record lost" 0 "$FINAL_LOST"
finish
