#!/usr/bin/env bash
# scripts/demo, the README's one command: it passes on a working tree and
# leaves no process, mount or file behind; it refuses a state directory
# that is in use without touching it; and when a step fails it says which,
# exits non-zero and still cleans up.
source "$(dirname "$0")/../lib.sh"

DEMO=$TOP/scripts/demo
DIR=${LOCALCLUSTER_DIR:-/tmp/ocfs2-test-demo-$$}
PORT=${LOCALCLUSTER_PORT:-$((20000 + RANDOM % 20000))}
FAKE=$DIR-build
OUT=$DIR.out

cleanup() {
	LOCALCLUSTER_DIR=$DIR lc down >/dev/null 2>&1 || true
	rm -rf "$FAKE" "$OUT"
}
trap cleanup EXIT

# demo [ENV=VALUE...]: run it on the private directory and port (the
# environment may name another port).
demo() { env LOCALCLUSTER_DIR="$DIR" LOCALCLUSTER_PORT="$PORT" "$@" "$DEMO" >"$OUT" 2>&1; }
# nothing_left: no process of its nodes, no mount, no state directory.
nothing_left() {
	# [/] keeps the pattern from matching this check's own command line;
	# the trailing / keeps /tmp/x from matching /tmp/x2.
	! pgrep -f "[/]${DIR#/}/" >/dev/null &&
		! grep -q "$DIR/" /proc/self/mountinfo &&
		test ! -e "$DIR"
}
show_out() { sed 's/^/       | /' "$OUT" | tail -n 30; }
# check_out DESC CMD...: check, and on a failure show what the demo printed.
check_out() {
	local before=$FAILED
	check "$@"
	((FAILED == before)) || show_out
}

echo "-- the demo on a working tree"
rc=0
demo || rc=$?
check_eq "scripts/demo exits 0" 0 "$rc"
((rc == 0)) || show_out
check "it reports every check passed" grep -qE '^demo: all [0-9]+ checks passed' "$OUT"
check "a survivor recovered the killed node" grep -q 'slot [0-9]* recovered' "$OUT"
check "no process, mount or state directory left" nothing_left

echo "-- a state directory in use is refused and left alone"
mkdir -p "$DIR"
: >"$DIR/someone-elses"
rc=0
demo || rc=$?
check_eq "scripts/demo exits 1" 1 "$rc"
check_out "it says why" grep -q "$DIR is in use" "$OUT"
check "the directory is untouched" test -e "$DIR/someone-elses"
rm -rf "$DIR"

echo "-- a failing step ends the demo, which still cleans up"
# A build whose fsd exits at once: the cluster comes up, the first mount fails.
mkdir -p "$FAKE"
for f in nmd hbd netd dlmd dlmfs o2ctl o2lock; do
	ln -s "$BUILD/$f" "$FAKE/$f"
done
printf '#!/bin/sh\necho "fsd: broken on purpose" >&2\nexit 1\n' >"$FAKE/fsd"
chmod +x "$FAKE/fsd"
rc=0
# A port of its own: nothing of the first run's cluster can be in the way.
demo OCFS2_BUILD="$FAKE" LOCALCLUSTER_PORT=$((PORT + 1)) || rc=$?
check_eq "scripts/demo exits 1" 1 "$rc"
check_out "it names the failed step" grep -q 'demo: FAILED: node1 could not mount the volume' "$OUT"
check "it shows fsd's reason" grep -q 'fsd: broken on purpose' "$OUT"
check "no process, mount or state directory left" nothing_left
finish
