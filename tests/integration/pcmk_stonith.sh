#!/usr/bin/env bash
# pcmkd-stonith, pcmkd's fencing program for fencing = pacemaker. With
# Debian's real libstonithd and no pacemaker fencer running here, it
# fails saying the fencer did not fence (pcmkd then retries). With a
# stand-in library (tests/helpers/fakestonithd.c) as libstonithd.so.26:
# it asks the fencer to power off the right node id with
# dlm_controld's timeout, exits 0 only when the fencer's history has the
# node fenced no earlier than it left, and asks nothing when it already
# was. A running pacemaker fencer is not tested here (it needs
# pacemaker's whole cluster: CIB, controller, a fence device).
source "$(dirname "$0")/../lib.sh"

STONITH=$BUILD/pcmkd-stonith
DIR=$(mktemp -d /tmp/pcmk-stonith.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
LOG=$DIR/calls
ln -s "$BUILD/tests/libfakestonithd.so" "$DIR/libstonithd.so.26"
fake() { env LD_LIBRARY_PATH="$DIR" FAKE_STONITH_LOG="$LOG" "$@"; }
calls() { paste -sd, "$LOG" 2>/dev/null; }

expect_error "bad arguments: usage" "usage: pcmkd-stonith" "$STONITH" node3 3
expect_error "a node id past 254 is refused" "usage: pcmkd-stonith" "$STONITH" node3 255 100
if ldconfig -p | grep -q 'libstonithd\.so\.26'; then
	expect_error "no fencer running: the real libstonithd fails, saying so" \
	    "pacemaker's fencer did not fence node node3 (3)" "$STONITH" node3 3 100
else
	expect_error "no libstonithd: fails, saying so" "libstonithd cannot be loaded" \
	    "$STONITH" node3 3 100
fi

: >"$LOG"
check "fenced after it left: exit 0" fake FAKE_STONITH_AFTER=2000 "$STONITH" node3 3 1500
check_eq "it asked whether fenced, powered node 3 off (300 s), checked again" \
    "time 3 0,kick 3 300 1,time 3 0" "$(calls)"

: >"$LOG"
expect_error "the fencer's last fence is older than the failure: not confirmed" \
    "before it left at 1500" fake FAKE_STONITH_AFTER=1499 "$STONITH" node3 3 1500

: >"$LOG"
expect_error "the fencer fails: exit 1 naming the error" "did not fence node node2 (2)" \
    fake FAKE_STONITH_KICK_RC=-62 "$STONITH" node2 2 1500
check_eq "after one kick" "time 2 0,kick 2 300 1" "$(calls)"

: >"$LOG"
check "already fenced since it left: no kick" fake FAKE_STONITH_LAST=1600 "$STONITH" node3 3 1500
check_eq "only the history asked" "time 3 0" "$(calls)"

: >"$LOG"
check "a fence before the failure is not enough: a new one" \
    fake FAKE_STONITH_LAST=1400 "$STONITH" node3 3 1500
check_eq "kicked" "time 3 0,kick 3 300 1,time 3 0" "$(calls)"
finish
