#!/usr/bin/env bash
# The systemd units under a real systemd 252: three nspawn containers
# (tests/systemd/nspawn-cluster) with the project installed by
# `make install PREFIX=/usr`, sharing one OCFS2 image (a loop device) and a
# private network. Covers start (waiting for READY=1), the config tree,
# hardening as applied, heartbeat and links across nodes, reload with a
# good and a bad cluster.conf, a failing start, restart after SIGKILL (and
# not after hbd's "fenced" exit status), the journal, and stop.
# Daemons whose binary is not built are left out (their unit is not
# installed either). Needs root, systemd-container, debootstrap; the first
# run builds the cached root file system (about 2 minutes).

# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

NC=$TOP/tests/systemd/nspawn-cluster
export NSPAWN_CLUSTER_DIR=/tmp/ocfs2-systemd-$TEST_NAME-$$
LOGS=/tmp/ocfs2-systemd-$TEST_NAME-$$.logs
CLUSTER=nspawn
NODES=3
TREE=/run/ocfs2/config/cluster/$CLUSTER

cleanup() {
	"$NC" down --logs "$LOGS" >/dev/null 2>&1 || echo "teardown of $NSPAWN_CLUSTER_DIR failed"
	if ((FAILED == 0)); then
		rm -rf "$LOGS"
	elif [[ -d $LOGS ]]; then
		echo "journals of the nodes: $LOGS"
	fi
}
trap cleanup EXIT

# on K CMD...: run CMD in node K (full capabilities, like an admin's shell).
on() {
	"$NC" exec "$@"
}

# on_all CMD...: on every node; fails if it fails on one.
on_all() {
	local k
	for ((k = 1; k <= NODES; k++)); do
		on "$k" "$@" || return 1
	done
}

prop() {
	on "$1" systemctl show -P "$2" "$3"
}

# The daemons under test: those built, with a unit.
DAEMONS=()
for d in nmd hbd netd dlmd dlmfs; do
	if [[ -x $BUILD/$d && -e $TOP/systemd/ocfs2-$d.service.in ]]; then
		DAEMONS+=("$d")
	fi
done
has() {
	[[ " ${DAEMONS[*]} " == *" $1 "* ]]
}
UNITS=("${DAEMONS[@]/#/ocfs2-}")
UNITS=("${UNITS[@]/%/.service}")
# Installed and required by ocfs2.target too, but these nodes run the o2cb
# stack: pcmkd's ExecCondition (nmd --stack-is pcmk) skips it.
OTHER_STACK_UNITS=()
if [[ -x $BUILD/pcmkd && -e $TOP/systemd/ocfs2-pcmkd.service.in ]]; then
	OTHER_STACK_UNITS+=(ocfs2-pcmkd.service)
fi
echo "daemons under test: ${DAEMONS[*]}"

# conf N [BAD]: cluster.conf of nodes 1..N; BAD breaks node 2's number
# (line 15).
conf() {
	local n=$1 bad=${2:-} k
	printf 'cluster:\n\tname = %s\n\tnode_count = %d\n\n' "$CLUSTER" "$n"
	for ((k = 1; k <= n; k++)); do
		printf 'node:\n\tname = node%d\n\tcluster = %s\n' "$k" "$CLUSTER"
		if [[ -n $bad && $k == 2 ]]; then
			printf '\tnumber = banana\n'
		else
			printf '\tnumber = %d\n' "$k"
		fi
		printf '\tip_address = 10.77.0.%d\n\tip_port = 7777\n\n' $((10 + k))
	done
}

# put_conf K TEXT: install TEXT as node K's cluster.conf.
put_conf() {
	on "$1" sh -c 'cat >/etc/ocfs2/cluster.conf.new && mv /etc/ocfs2/cluster.conf.new /etc/ocfs2/cluster.conf' <<<"$2"
}

tree_nodes() {
	on "$1" ls "$TREE/node" | tr '\n' ' '
}

all_active() {
	local k=$1 u
	for u in "${UNITS[@]}" ocfs2.target; do
		[[ $(on "$k" systemctl is-active "$u") == active ]] || return 1
	done
}

all_inactive() {
	local k=$1 u
	for u in "${UNITS[@]}" ocfs2.target; do
		[[ $(on "$k" systemctl is-active "$u") == inactive ]] || return 1
	done
}

no_daemon_left() {
	local k=$1 d
	for d in "${DAEMONS[@]}"; do
		! on "$k" pgrep -x "$d" >/dev/null || return 1
	done
}

no_mount_left() {
	! on "$1" findmnt -rn /run/ocfs2/config >/dev/null &&
		! on "$1" findmnt -rn /run/ocfs2/dlm >/dev/null
}

# -------------------------------------------------------------- boot
t0=$SECONDS
if ! out=$("$NC" up "$NODES" 2>&1); then
	printf '%s\n' "$out" | sed 's/^/       | /'
	fail "$NODES containers boot"
	finish
	exit 1
fi
pass "$NODES containers boot with systemd as PID 1 ($((SECONDS - t0)) s, rootfs included)"

# -------------------------------------------------------------- units
check "the installed units pass systemd-analyze verify" \
	on 1 systemd-analyze verify ocfs2.target "${UNITS[@]}" "${OTHER_STACK_UNITS[@]}"
check_eq "ocfs2.target requires exactly the built daemons' services" \
	"$(printf '%s\n' "${UNITS[@]}" "${OTHER_STACK_UNITS[@]}" | sort | tr '\n' ' ')" \
	"$(prop 1 Requires ocfs2.target | tr ' ' '\n' | sort | tr '\n' ' ')"
check_eq "nmd's unit runs the installed binary" "/usr/sbin/nmd" \
	"$(on 1 systemctl show -P ExecStart ocfs2-nmd | sed -n 's/.*path=\([^ ;]*\).*/\1/p')"

# -------------------------------------------------------------- start
for ((k = 1; k <= NODES; k++)); do
	t0=$(date +%s%N)
	check "node$k: systemctl start ocfs2.target" on "$k" systemctl start ocfs2.target
	ms=$((($(date +%s%N) - t0) / 1000000))
	# No waiting here: the start job ends only once every daemon said READY=1.
	check "node$k: every unit active as start returns (${ms} ms)" all_active "$k"
	for d in "${DAEMONS[@]}"; do
		if [[ $d == dlmfs ]]; then
			# No socket: its tree is its answer.
			check "node$k: dlmfs has mounted /run/ocfs2/dlm as start returns" \
				on "$k" findmnt -rn -t fuse.ocfs2_dlmfs /run/ocfs2/dlm
			continue
		fi
		check "node$k: $d answers as start returns" on "$k" o2ctl ping "$d"
	done
	for u in "${OTHER_STACK_UNITS[@]}"; do
		check_eq "node$k: $u skipped by its condition (stack o2cb)" exec-condition \
			"$(prop "$k" Result "$u")"
	done
	check_eq "node$k: nmd's tree lists the nodes" "node1 node2 node3 " "$(tree_nodes "$k")"
	check_eq "node$k: nmd's tree marks node$k local" "1" \
		"$(on "$k" cat "$TREE/node/node$k/local")"
done
check_eq "nmd is Type=notify and its status is its own sd_notify STATUS" \
	"notify /etc/ocfs2/cluster.conf loaded" \
	"$(prop 1 Type ocfs2-nmd) $(prop 1 StatusText ocfs2-nmd | cut -d: -f1)"
check_eq "the daemons share /run/ocfs2 (RuntimeDirectoryPreserve=yes)" "yes" \
	"$(prop 1 RuntimeDirectoryPreserve ocfs2-nmd)"

# The sandbox the daemons really run in.
# capability_mask CAP...: the CapBnd value of exactly these capabilities.
capability_mask() {
	local m=0 c
	for c in "$@"; do
		case $c in
		CAP_KILL) m=$((m | 1 << 5)) ;;
		CAP_SYS_ADMIN) m=$((m | 1 << 21)) ;;
		CAP_SYS_BOOT) m=$((m | 1 << 22)) ;;
		esac
	done
	printf '%016x' "$m"
}
declare -A CAPS=([nmd]="CAP_SYS_ADMIN" [hbd]="CAP_SYS_BOOT CAP_KILL" [netd]="" [dlmd]="" [dlmfs]="CAP_SYS_ADMIN")
for d in "${DAEMONS[@]}"; do
	pid=$(prop 1 MainPID "ocfs2-$d")
	# shellcheck disable=SC2086,SC2016 # CAPS holds a list; an awk program
	check_eq "$d runs with its bounding set, no_new_privs and a seccomp filter" \
		"$(capability_mask ${CAPS[$d]}) 1 2" \
		"$(on 1 awk '/^CapBnd:/ { c = $2 } /^NoNewPrivs:/ { n = $2 } /^Seccomp:/ { s = $2 }
			END { print c, n, s }' "/proc/$pid/status")"
done
if has hbd; then
	expect_error "hbd's view of /etc is read-only (ProtectSystem=strict)" "Read-only file system" \
		on 1 nsenter -t "$(prop 1 MainPID ocfs2-hbd)" -m touch /etc/ocfs2/probe
fi

# ------------------------------------------------ across the nodes
if has hbd; then
	# In parallel: each start returns once its region is steady (~12 s).
	hb_pids=()
	for ((k = 1; k <= NODES; k++)); do
		on "$k" o2ctl heartbeat start /dev/ocfs2-disk >/dev/null 2>&1 &
		hb_pids+=($!)
	done
	for ((k = 1; k <= NODES; k++)); do
		if wait "${hb_pids[k - 1]}"; then
			pass "node$k: hbd heartbeats on the shared disk under its sandbox"
		else
			fail "node$k: hbd heartbeats on the shared disk under its sandbox"
		fi
	done
	live() { [[ $(on "$1" o2ctl --json heartbeat | jq -c .live_nodes) == "[1,2,3]" ]]; }
	for ((k = 1; k <= NODES; k++)); do
		check "node$k: hbd sees nodes 1 2 3 live" wait_for 20 live "$k"
	done
fi
if has netd && has hbd; then
	links_up() {
		[[ $(on "$1" o2ctl --json net-status |
			jq -r '[.links[] | select(.link != "self") | .link] | join(" ")') == "up up" ]]
	}
	for ((k = 1; k <= NODES; k++)); do
		check "node$k: netd links to the two other nodes" wait_for 20 links_up "$k"
	done
fi

# -------------------------------------------------------------- reload
GOOD4=$(conf 4)
for ((k = 1; k <= NODES; k++)); do
	put_conf "$k" "$GOOD4"
	check "node$k: systemctl reload ocfs2.target" on "$k" systemctl reload ocfs2.target
	# ExecReload is synchronous: no waiting.
	check_eq "node$k: node4 is in the tree as reload returns" "node1 node2 node3 node4 " \
		"$(tree_nodes "$k")"
done
check_eq "nmd's status after the reload" "/etc/ocfs2/cluster.conf reloaded" \
	"$(prop 1 StatusText ocfs2-nmd | cut -d: -f1)"
if has netd; then
	check_eq "netd follows nmd's reload (node4 listed, down)" "down" \
		"$(on 1 o2ctl --json net-status | jq -r '.links[] | select(.name == "node4") | .link')"
fi

pid_before=$(prop 1 MainPID ocfs2-nmd)
put_conf 1 "$(conf 4 bad)"
expect_error "a broken cluster.conf: systemctl reload ocfs2-nmd fails" "failed" \
	on 1 systemctl reload ocfs2-nmd
on 1 systemctl reload ocfs2.target >/dev/null 2>&1
check_eq "a broken cluster.conf: nmd keeps running" "active $pid_before" \
	"$(on 1 systemctl is-active ocfs2-nmd) $(prop 1 MainPID ocfs2-nmd)"
check_eq "a broken cluster.conf: the old configuration stays" "node1 node2 node3 node4 " \
	"$(tree_nodes 1)"
status=$(on 1 systemctl status --no-pager ocfs2-nmd 2>&1)
check "a broken cluster.conf: systemctl status names the file and line" \
	grep -qF "Status: \"reload failed, running on the previous configuration: /etc/ocfs2/cluster.conf:15: invalid number 'banana'" <<<"$status"
put_conf 1 "$GOOD4"
check "a repaired cluster.conf reloads" on 1 systemctl reload ocfs2.target
check_eq "... and the status says so" "/etc/ocfs2/cluster.conf reloaded" \
	"$(prop 1 StatusText ocfs2-nmd | cut -d: -f1)"

# ------------------------------------------------- a start that fails
on 2 systemctl stop ocfs2.target ocfs2-nmd.service
put_conf 2 "$(conf 4 bad)"
expect_error "node2: start with a broken cluster.conf fails" "failed" \
	on 2 systemctl start ocfs2.target
# Restart=on-failure retries a failed ExecStartPre too, until the start
# limit; then the unit stays failed.
nmd_failed() { [[ $(on 2 systemctl is-active ocfs2-nmd) == failed ]]; }
check "node2: ... nmd ends up failed (ExecStartPre nmd -n, retried to the limit)" \
	wait_for 20 nmd_failed
check_eq "node2: ... its main process never ran" "exit-code 0" \
	"$(prop 2 Result ocfs2-nmd) $(prop 2 ExecMainPID ocfs2-nmd)"
check "node2: ... and its journal names the line" \
	grep -qF "/etc/ocfs2/cluster.conf:15: invalid number 'banana'" \
	<<<"$(on 2 journalctl -u ocfs2-nmd -o cat --no-pager)"
check "node2: ... no daemon runs" wait_for 10 no_daemon_left 2
put_conf 2 "$GOOD4"
on 2 systemctl reset-failed
check "node2: starts again once repaired" on 2 systemctl start ocfs2.target
check "node2: every unit active" all_active 2

# -------------------------------------------- SIGKILL, Restart=on-failure
nmd_pid=$(prop 1 MainPID ocfs2-nmd)
others=()
for u in "${UNITS[@]}"; do
	[[ $u == ocfs2-nmd.service ]] || others+=("$u=$(prop 1 MainPID "$u")")
done
on 1 kill -KILL "$nmd_pid"
restarted() {
	local p
	p=$(prop 1 MainPID ocfs2-nmd)
	[[ $p != 0 && $p != "$nmd_pid" && $(on 1 systemctl is-active ocfs2-nmd) == active ]]
}
check "kill -9 nmd: systemd restarts it" wait_for 15 restarted
check_eq "kill -9 nmd: counted as one restart" "1" "$(prop 1 NRestarts ocfs2-nmd)"
check "kill -9 nmd: the tree is back (stale mount replaced)" wait_for 5 on 1 ls "$TREE/node/node4"
tree_is() { [[ $(tree_nodes "$1") == "$2" ]]; }
check "kill -9 nmd: the tree has the nodes again" wait_for 5 tree_is 1 "node1 node2 node3 node4 "
now=()
for u in "${UNITS[@]}"; do
	[[ $u == ocfs2-nmd.service ]] || now+=("$u=$(prop 1 MainPID "$u")")
done
check_eq "kill -9 nmd: no other daemon was restarted" "${others[*]}" "${now[*]}"

if has hbd; then
	# A crashed hbd is restarted; a fenced one stays fenced across that
	# restart (its state is in /run/ocfs2/hbd.fenced: hbd_iofault.sh).
	hbd_pid=$(prop 3 MainPID ocfs2-hbd)
	on 3 kill -KILL "$hbd_pid"
	hbd_restarted() {
		local p
		p=$(prop 3 MainPID ocfs2-hbd)
		[[ $p != 0 && $p != "$hbd_pid" && $(on 3 systemctl is-active ocfs2-hbd) == active ]]
	}
	check "kill -9 hbd: systemd restarts it" wait_for 15 hbd_restarted

	# The watchdog: hbd has run ~10 s or more; its pings moved the timestamp.
	fed() {
		local a w
		a=$(prop 1 ActiveEnterTimestampMonotonic ocfs2-hbd)
		w=$(prop 1 WatchdogTimestampMonotonic ocfs2-hbd)
		((w > a + 5000000))
	}
	check "hbd feeds the watchdog (WatchdogSec=$(prop 1 WatchdogUSec ocfs2-hbd))" wait_for 15 fed
fi

# -------------------------------------------------------------- journal
check "the journal has nmd's lines under SYSLOG_IDENTIFIER=nmd" \
	grep -q "serving cluster $CLUSTER as node node1" \
	<<<"$(on 1 journalctl -u ocfs2-nmd SYSLOG_IDENTIFIER=nmd -o cat --no-pager)"
check "... the reload's refusal as an error (priority 3)" \
	grep -q "invalid number 'banana'" \
	<<<"$(on 1 journalctl -u ocfs2-nmd SYSLOG_IDENTIFIER=nmd PRIORITY=3 -o cat --no-pager)"
for d in "${DAEMONS[@]}"; do
	[[ $d == nmd ]] && continue
	check "the journal has $d's lines under SYSLOG_IDENTIFIER=$d" \
		test -n "$(on 1 journalctl -u "ocfs2-$d" SYSLOG_IDENTIFIER="$d" -o cat --no-pager)"
done

# -------------------------------------------------------------- stop
check "node1: systemctl stop ocfs2.target" on 1 systemctl stop ocfs2.target
check "node1: every daemon stops" wait_for 20 all_inactive 1
check "node1: no daemon process left" wait_for 10 no_daemon_left 1
check "node1: no mount left under /run/ocfs2" no_mount_left 1
for u in "${UNITS[@]}"; do
	check_eq "node1: $u stopped cleanly (no SIGKILL, status 0)" "success 0" \
		"$(prop 1 Result "$u") $(prop 1 ExecMainStatus "$u")"
done
check "node2: systemctl stop ocfs2.target ocfs2-nmd.service" \
	on 2 systemctl stop ocfs2.target ocfs2-nmd.service
check "node2: ... has stopped everything when it returns" all_inactive 2
check "node2: ... no mount left" no_mount_left 2

finish
