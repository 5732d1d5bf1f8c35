# Shared by the integration tests (sourced). Each test script runs checks
# with `check DESCRIPTION COMMAND...` or `expect_fail ERRNO-TEXT ...`, and
# ends with `finish`, which prints "NAME: P passed, F failed" and exits
# non-zero when any check failed.

set -u

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Absolute: make check passes "build", and tests cd and make symlinks.
BUILD=$(realpath -m "${OCFS2_BUILD:-$TOP/build}")
export OCFS2_BUILD=$BUILD
O2CTL=$BUILD/o2ctl
LOCALCLUSTER=$TOP/scripts/localcluster
TEST_NAME=$(basename "$0" .sh)
PASSED=0
FAILED=0

pass() { PASSED=$((PASSED + 1)); printf '  ok   %s\n' "$1"; }
fail() { FAILED=$((FAILED + 1)); printf '  FAIL %s\n' "$1"; }

# check DESC CMD...: CMD must succeed.
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$desc"
	else
		fail "$desc"
		printf '%s\n' "$out" | sed 's/^/       | /' | tail -n 20
	fi
}

# expect_error DESC TEXT CMD...: CMD must fail and print TEXT (e.g. an errno string).
expect_error() {
	local desc=$1 text=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		fail "$desc (succeeded, expected: $text)"
	elif [[ $out == *"$text"* ]]; then
		pass "$desc"
	else
		fail "$desc (expected \"$text\")"
		printf '%s\n' "$out" | sed 's/^/       | /' | tail -n 20
	fi
}

# check_eq DESC EXPECTED ACTUAL
check_eq() {
	if [[ "$2" == "$3" ]]; then
		pass "$1"
	else
		fail "$1 (expected \"$2\", got \"$3\")"
	fi
}

# wait_for TIMEOUT_S CMD...: poll every 50 ms until CMD succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.05
	done
}

# write_conf NODE...: cluster.conf ($CONF) of cluster alpha (on stack
# $CONF_STACK when set) with these
# nodes (name:number:address), all on CONF_PORT (a port of the script's
# own: scripts run side by side, tests/run)
CONF_PORT=$((20000 + RANDOM % 20000))
write_conf() {
	local spec name num addr
	{
		printf 'cluster:\n\tname = alpha\n\tnode_count = %d\n' $#
		[[ -z ${CONF_STACK:-} ]] || printf '\tstack = %s\n' "$CONF_STACK"
		printf '\n'
		for spec in "$@"; do
			IFS=: read -r name num addr <<<"$spec"
			printf 'node:\n\tname = %s\n\tnumber = %s\n\tip_address = %s\n\tip_port = %d\n\tcluster = alpha\n\n' \
			    "$name" "$num" "$addr" "$CONF_PORT"
		done
	} >"$CONF"
}

# A private local cluster per test script, torn down on exit.
lc() { "$LOCALCLUSTER" "$@"; }
# A port of its own too: scripts run side by side (tests/run).
lc_setup() {
	export LOCALCLUSTER_DIR=${LOCALCLUSTER_DIR:-/tmp/ocfs2-test-$TEST_NAME-$$}
	export LOCALCLUSTER_PORT=${LOCALCLUSTER_PORT:-$((20000 + RANDOM % 20000))}
	trap 'lc down >/dev/null 2>&1 || true' EXIT
}

# status_linked K N: o2ctl status on node K of N shows it not fenced, and
# every other node heartbeating and linked.
status_linked() {
	lc exec "$1" "$O2CTL" --json status | jq -e --argjson n "$2" '
		(.fenced | not) and (.nodes | length == $n) and
		all(.nodes[] | select(.local | not);
		    .heartbeat == "up" and .link == "up")'
}

# skip_script WHY: this environment cannot run the script at all. Says
# "NAME: skipped: WHY", which tests/run counts as a skip (neither a pass
# nor a failure), and exits. Only for what the machine lacks, never for
# what the code does.
skip_script() {
	printf '%s: skipped: %s\n' "$TEST_NAME" "$1"
	exit 0
}

finish() {
	printf '%s: %d passed, %d failed\n' "$TEST_NAME" "$PASSED" "$FAILED"
	[[ $FAILED -eq 0 ]]
}
