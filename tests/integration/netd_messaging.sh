#!/usr/bin/env bash
# netd carrying messages between three nodes of the local cluster, as a
# local client sees it through netd.sock: every size up to the limit in
# order with the right statuses, 10,000 messages in flight across every
# pair with none lost or duplicated, errors o2net's way, a node killed
# with requests in flight (EHOSTDOWN at once), and its return.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"

lc_setup
trap netd_cleanup EXIT
OUT=$(mktemp -d /tmp/netd-msg.XXXXXX)

netd_up 3 || { fail "localcluster up 3"; finish; exit 1; }
for k in 1 2 3; do hb_start $k; done
check "all three nodes linked to each other" wait_for 30 mesh_up 3

echo "-- links pin their node items"
expect_error "nmd refuses an idle timeout change while links are up" "Invalid argument" \
    o2 1 set cluster/lc/idle_timeout_ms 45000
check "node items show the link pins" bash -c \
    "'$O2CTL' --rundir '$(rundir 1)' --json config | grep -q '\"name\":\"node2\",\"num\":2,[^}]*\"pins\":[1-9]'"

for k in 1 2 3; do echo_start $k "$OUT/echo$k"; done

echo "-- every size, in order, with the handler's status"
check "node1 -> node2: every size 0..8192" o2 1 net-send 2 --sizes 0-8192 --window 256
check "node3 -> node1: every size 0..8192" o2 3 net-send 1 --sizes 0-8192 --window 256
check "node2 -> all: 200 messages, every live node answers" o2 2 net-send all --count 200 --size 300

echo "-- o2net's errors"
check "to self is ELOOP" o2 1 net-send 1 --expect-errno 40
check "over the limit is EINVAL" o2 1 net-send 2 --size 8193 --expect-errno 22
check "no handler is ENOPROTOOPT" o2 1 net-send 2 --type 999 --expect-errno 92
check "an unknown node is EINVAL" o2 1 net-send 9 --expect-errno 22
check "handler max_len exceeded is EOVERFLOW" bash -c "
	'$O2CTL' --rundir '$(rundir 2)' net-echo --type 77 --max-len 100 >/dev/null & p=\$!
	sleep 0.3
	'$O2CTL' --rundir '$(rundir 1)' net-send 2 --type 77 --size 101 --expect-errno 75; rc=\$?
	kill \$p; exit \$rc"
# Handlers answer one-way: netd logs a reply it refuses, and the sender
# must hear of it rather than wait for an answer that cannot come.
check "a handler's reply over the limit is EOVERFLOW to the sender" bash -c "
	'$O2CTL' --rundir '$(rundir 2)' net-echo --type 78 --reply-size 8193 >/dev/null & p=\$!
	sleep 0.3
	timeout 10 '$O2CTL' --rundir '$(rundir 1)' net-send 2 --type 78 --expect-errno 75; rc=\$?
	kill \$p; exit \$rc"
check "netd logged the reply it refused" \
    grep -q 'refused one-way message type 304 .*8193-byte reply' "$LOCALCLUSTER_DIR/node2/log/netd.log"

echo "-- 10,000 messages in flight across all pairs"
before=()
for k in 1 2 3; do before[$k]=0; done
pids=()
for k in 1 2 3; do
	for n in 1 2 3; do
		((n == k)) && continue
		o2 $k --json net-send $n --count 1667 --window 1667 --size 200 >"$OUT/flood$k$n" 2>&1 &
		pids+=($!)
	done
done
ok=1
for p in "${pids[@]}"; do wait "$p" || ok=0; done
check_eq "every sender got 1667 right answers (10,002 in flight)" "1" "$ok"
total=0
for f in "$OUT"/flood*; do total=$((total + $(json_num "$f" ok))); done
check_eq "answers counted by the senders" "10002" "$total"
bg_stop_all
rec=0 dis="" dup=""
for k in 1 2 3; do
	r=$(json_num "$OUT/echo$k" received)
	[[ $r == missing ]] || rec=$((rec + r))
	dis+="$(json_num "$OUT/echo$k" out_of_order) "
	dup+="$(json_num "$OUT/echo$k" duplicates) "
done
check_eq "handlers saw nothing out of order" "0 0 0 " "$dis"
check_eq "handlers saw no duplicate" "0 0 0 " "$dup"
# 2 x 8193 sizes + 200 to each of 2 nodes + 10,002 (the EOVERFLOW one never reaches them)
check_eq "handlers received exactly what was sent" "$((2 * 8193 + 400 + 10002))" "$rec"

echo "-- a node killed with requests in flight"
"$O2CTL" --rundir "$(rundir 1)" --json net-watch >"$OUT/watch1" 2>&1 &
BG+=($!)
wait_for 5 grep -q subscribed "$OUT/watch1"
echo_start 3 "$OUT/hold3" --no-reply
echo_start 2 "$OUT/echo2b"
o2 1 --json net-send 3 --count 500 --window 500 --expect-errno 112 >"$OUT/inflight" 2>&1 &
sender=$!
pending3() { o2 1 --json net-status | grep -q '"node":3,[^}]*"pending":500'; }
check "500 requests pending on the link to node3" wait_for 10 pending3
t0=$(date +%s%3N)
lc kill 3 >/dev/null
wait "$sender"; rc=$?
t1=$(date +%s%3N)
check_eq "every pending request failed with EHOSTDOWN" "0" "$rc"
# the kill closes the link: no timeout is waited for (the idle timeout is
# 30 s), but the kill of a node's sanitized daemons itself may take a second
check "within a few seconds of the kill, not an idle timeout ($((t1 - t0)) ms)" \
    test $((t1 - t0)) -lt 5000
check "then: no link to node3, ENOTCONN at once" o2 1 net-send 3 --expect-errno 107
check "node1 and node2 still talk" o2 1 net-send 2 --count 100
check "netd logged the loss" bash -c "grep -q 'no longer connected to node 3' '$LOCALCLUSTER_DIR/node1/log/netd.log'"
check "subscribers got a link-down event for node3" \
    grep -q '{"event":"link","node":3,"link":"down"' "$OUT/watch1"

echo "-- restart reconnects"
lc start 3 >/dev/null
hb_start 3
check "node3 linked again to node1 and node2" wait_for 30 mesh_up 3
check "subscribers got a link-up event for node3" \
    grep -q '{"event":"link","node":3,"link":"up","reason":"accepted"}' "$OUT/watch1"
echo_start 3 "$OUT/echo3b"
check "node1 -> node3 after the restart" o2 1 net-send 3 --count 1000 --window 100
check "node2 -> node3 after the restart" o2 2 net-send 3 --count 1000 --window 100
for k in 1 2 3; do check "netd of node$k stayed up" o2 $k ping netd; done

rm -rf "$OUT"
finish
