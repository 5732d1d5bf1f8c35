#!/usr/bin/env bash
# nmd as an admin meets it: its configfs-like tree driven with mkdir,
# echo, cat and rmdir; reloads of a good and a bad cluster.conf; a
# subscriber that sees every change.
source "$(dirname "$0")/../lib.sh"

DIR=$(mktemp -d /tmp/nmd-tree.XXXXXX)
RUN=$DIR/run
CONF=$DIR/cluster.conf
TUN=$DIR/o2cb
NMD_PID=
WATCH_PID=
NETD_PID=

cleanup() {
	[[ -n $WATCH_PID ]] && kill "$WATCH_PID" 2>/dev/null
	[[ -n $NETD_PID ]] && kill "$NETD_PID" 2>/dev/null && wait "$NETD_PID" 2>/dev/null
	[[ -n $NMD_PID ]] && kill "$NMD_PID" 2>/dev/null && wait "$NMD_PID" 2>/dev/null
	umount -l "$RUN/config" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT


start_nmd() {
	"$BUILD/nmd" -c "$CONF" -t "$TUN" --node n1 --rundir "$RUN" >>"$DIR/nmd.log" 2>&1 &
	NMD_PID=$!
	wait_for 10 "$O2CTL" --rundir "$RUN" ping nmd
}

write_conf n1:1:127.0.0.2 n2:2:127.0.0.3 n3:3:127.0.0.4
printf 'O2CB_IDLE_TIMEOUT_MS=30000\n' >"$TUN"
start_nmd
check "nmd starts" kill -0 "$NMD_PID"
C=$RUN/config/cluster/alpha

echo "-- tree shape"
check_eq "top of the tree" "cluster" "$(ls "$RUN/config")"
check_eq "cluster item" "fence_method heartbeat idle_timeout_ms keepalive_delay_ms node reconnect_delay_ms" \
    "$(ls "$C" | sort | xargs)"
check_eq "nodes from cluster.conf" "n1 n2 n3" "$(ls "$C/node" | xargs)"
check_eq "node attributes" "ipv4_address ipv4_port local num" "$(ls "$C/node/n2" | sort | xargs)"
check_eq "n2 num" "2" "$(cat "$C/node/n2/num")"
check_eq "n2 address" "127.0.0.3" "$(cat "$C/node/n2/ipv4_address")"
check_eq "n1 is local" "1" "$(cat "$C/node/n1/local")"
check_eq "n2 is not local" "0" "$(cat "$C/node/n2/local")"
check_eq "idle timeout default" "30000" "$(cat "$C/idle_timeout_ms")"
check_eq "dead_threshold default" "31" "$(cat "$C/heartbeat/dead_threshold")"
check_eq "heartbeat mode" "local" "$(cat "$C/heartbeat/mode")"

"$O2CTL" --rundir "$RUN" watch >"$DIR/watch.out" 2>&1 &
WATCH_PID=$!
wait_for 5 grep -q watching "$DIR/watch.out"

echo "-- a node made by hand"
check "mkdir node n4" mkdir "$C/node/n4"
expect_error "num before address and port" "Invalid argument" bash -c "echo 4 > $C/node/n4/num"
expect_error "port 0" "Invalid argument" bash -c "echo 0 > $C/node/n4/ipv4_port"
expect_error "port 65535" "Numerical result out of range" bash -c "echo 65535 > $C/node/n4/ipv4_port"
expect_error "port not a number" "Invalid argument" bash -c "echo seven > $C/node/n4/ipv4_port"
check "port 7777" sh -c "echo 7777 > $C/node/n4/ipv4_port"
expect_error "port is write-once" "Device or resource busy" bash -c "echo 7778 > $C/node/n4/ipv4_port"
expect_error "address with 3 octets" "Invalid argument" bash -c "echo 127.0.5 > $C/node/n4/ipv4_address"
expect_error "address octet 256" "Numerical result out of range" bash -c "echo 127.0.0.256 > $C/node/n4/ipv4_address"
expect_error "address of n2" "File exists" bash -c "echo 127.0.0.3 > $C/node/n4/ipv4_address"
check "address 127.0.0.5" sh -c "echo 127.0.0.5 > $C/node/n4/ipv4_address"
expect_error "num 255" "Numerical result out of range" bash -c "echo 255 > $C/node/n4/num"
expect_error "num of n3" "File exists" bash -c "echo 3 > $C/node/n4/num"
check "num 0x4 (hex, as the kernel parses)" sh -c "echo 0x4 > $C/node/n4/num"
expect_error "num is write-once" "Device or resource busy" bash -c "echo 5 > $C/node/n4/num"
check_eq "cat num" "4" "$(cat "$C/node/n4/num")"
check_eq "cat port" "7777" "$(cat "$C/node/n4/ipv4_port")"
check_eq "cat address" "127.0.0.5" "$(cat "$C/node/n4/ipv4_address")"
expect_error "a second local node" "Device or resource busy" bash -c "echo 1 > $C/node/n4/local"
expect_error "files cannot be created" "Operation not permitted" touch "$C/node/n4/extra"
expect_error "a name over 64 characters" "File name too long" mkdir "$C/node/$(printf 'x%.0s' {1..65})"
check "rmdir n4" rmdir "$C/node/n4"
check_eq "n4 is gone" "n1 n2 n3" "$(ls "$C/node" | xargs)"

echo "-- cluster attributes"
expect_error "a second cluster" "No space left on device" mkdir "$RUN/config/cluster/beta"
expect_error "idle timeout 0" "Invalid argument" bash -c "echo 0 > $C/idle_timeout_ms"
expect_error "idle timeout 2^32-1" "Numerical result out of range" bash -c "echo 4294967295 > $C/idle_timeout_ms"
expect_error "idle timeout below keepalive" "Invalid argument" bash -c "echo 1000 > $C/idle_timeout_ms"
expect_error "keepalive above idle timeout" "Invalid argument" bash -c "echo 40000 > $C/keepalive_delay_ms"
check "idle timeout 20000" sh -c "echo 20000 > $C/idle_timeout_ms"
check_eq "cat idle timeout" "20000" "$(cat "$C/idle_timeout_ms")"
expect_error "fence method without newline" "Invalid argument" bash -c "printf reset > $C/fence_method"
expect_error "unknown fence method" "Invalid argument" bash -c "echo sideways > $C/fence_method"
check "fence method panic" sh -c "echo panic > $C/fence_method"
check_eq "cat fence method" "panic" "$(cat "$C/fence_method")"
expect_error "rmdir of the populated cluster" "Directory not empty" rmdir "$C"

echo "-- heartbeat regions"
R=$C/heartbeat/0123456789ABCDEF0123456789ABCDEF
check "mkdir region" mkdir "$R"
expect_error "a region name over 32 characters" "File name too long" mkdir "$C/heartbeat/0123456789ABCDEF0123456789ABCDEF0"
expect_error "dev before its geometry" "Invalid argument" bash -c "echo $CONF > $R/dev"
expect_error "block_bytes 1000" "Invalid argument" bash -c "echo 1000 > $R/block_bytes"
expect_error "block_bytes 8192" "Numerical result out of range" bash -c "echo 8192 > $R/block_bytes"
expect_error "blocks 0" "Numerical result out of range" bash -c "echo 0 > $R/blocks"
expect_error "blocks 256" "Numerical result out of range" bash -c "echo 256 > $R/blocks"
check "geometry" sh -c "echo 512 > $R/block_bytes && echo 2200 > $R/start_block && echo 255 > $R/blocks"
expect_error "dev that does not exist" "No such file or directory" bash -c "echo $DIR/nope > $R/dev"
check "dev" sh -c "echo $CONF > $R/dev"
check_eq "cat dev" "$CONF" "$(cat "$R/dev")"
expect_error "geometry fixed once started" "Invalid argument" bash -c "echo 1024 > $R/block_bytes"
expect_error "pid is read-only" "Permission denied" bash -c "echo 1 > $R/pid"
check "dead_threshold accepted while a region exists" sh -c "echo 7 > $C/heartbeat/dead_threshold"
check_eq "... but ignored, as the kernel does" "31" "$(cat "$C/heartbeat/dead_threshold")"
check "rmdir region" rmdir "$R"
check "dead_threshold 7" sh -c "echo 7 > $C/heartbeat/dead_threshold"
check_eq "cat dead_threshold" "7" "$(cat "$C/heartbeat/dead_threshold")"
check "dead_threshold 2 ignored (minimum 3)" sh -c "echo 2 > $C/heartbeat/dead_threshold"
check_eq "... still 7" "7" "$(cat "$C/heartbeat/dead_threshold")"
expect_error "mode sideways" "Invalid argument" bash -c "echo sideways > $C/heartbeat/mode"
check "mode GLOBAL (case-insensitive)" sh -c "echo GLOBAL > $C/heartbeat/mode"
check_eq "cat mode" "global" "$(cat "$C/heartbeat/mode")"

echo "-- the subscriber saw each change"
wait_for 5 grep -q "set cluster/alpha/heartbeat/mode = global" "$DIR/watch.out"
for line in "mkdir cluster/alpha/node/n4" "set cluster/alpha/node/n4/num = 4" \
    "rmdir cluster/alpha/node/n4" "set cluster/alpha/idle_timeout_ms = 20000" \
    "mkdir cluster/alpha/heartbeat/0123456789ABCDEF0123456789ABCDEF" \
    "set cluster/alpha/heartbeat/dead_threshold = 7" \
    "set cluster/alpha/heartbeat/mode = global"; do
	check "event: $line" grep -qx "$line" "$DIR/watch.out"
done
check "no event for an ignored write" sh -c "! grep -q 'dead_threshold = 31' $DIR/watch.out"
check "no event for a refused write" sh -c "! grep -q 'num = 5' $DIR/watch.out"

echo "-- reload"
write_conf n1:1:127.0.0.2 n2:2:127.0.0.3 n5:5:127.0.0.6
printf 'O2CB_IDLE_TIMEOUT_MS=25000\nO2CB_KEEPALIVE_DELAY_MS=3000\n' >"$TUN"
check "SIGHUP reload" kill -HUP "$NMD_PID"
wait_for 5 test -d "$C/node/n5"
check_eq "node added, node removed" "n1 n2 n5" "$(ls "$C/node" | xargs)"
check_eq "n5 number" "5" "$(cat "$C/node/n5/num")"
check_eq "idle timeout from the tunables" "25000" "$(cat "$C/idle_timeout_ms")"
check_eq "keepalive from the tunables" "3000" "$(cat "$C/keepalive_delay_ms")"
wait_for 5 grep -q "reloaded" "$DIR/watch.out"
check "subscriber saw the reload" grep -qx "mkdir cluster/alpha/node/n5" "$DIR/watch.out"
check "subscriber saw n3 go" grep -qx "rmdir cluster/alpha/node/n3" "$DIR/watch.out"

write_conf n1:1:127.0.0.2 n2:2:127.0.0.3 n5:5:127.0.0.6 n6:6:127.0.0.7
out=$("$O2CTL" --rundir "$RUN" reload 2>&1)
check_eq "o2ctl reload succeeds" "0" "$?"
check "o2ctl reload reports what it applied" grep -q "applied: node n6 added" <<<"$out"

cp "$CONF" "$DIR/good.conf"
sed -i 's/ip_address = 127.0.0.7/ip_address = 127.0.0.700/' "$CONF"
badline=$(grep -n '127.0.0.700' "$CONF" | cut -d: -f1)
expect_error "an invalid file is refused with its line" "cluster.conf:$badline:" \
    "$O2CTL" --rundir "$RUN" reload
check_eq "the running config is kept" "n1 n2 n5 n6" "$(ls "$C/node" | xargs)"
check "o2ctl config shows why" sh -c "'$O2CTL' --rundir '$RUN' config | grep -q 'last reload FAILED: .*cluster.conf:$badline:'"
check "the log names file and line" grep -q "cluster.conf:$badline:" "$DIR/nmd.log"
check "nmd -n rejects it too" sh -c "! '$BUILD/nmd' -n -c '$CONF' -t '$TUN' --node n1"
expect_error "check-config names the line" "cluster.conf:$badline:" \
    "$O2CTL" check-config "$CONF" --node n1 -t "$TUN"
cp "$DIR/good.conf" "$CONF"
check "check-config accepts the good file" "$O2CTL" check-config "$CONF" --node n1 -t "$TUN"
check "a good reload clears the error" "$O2CTL" --rundir "$RUN" reload
check "o2ctl config --json" sh -c "'$O2CTL' --rundir '$RUN' --json config | python3 -c 'import json,sys; c=json.load(sys.stdin); assert c[\"cluster\"]==\"alpha\" and c[\"last_reload_error\"]==\"\" and len(c[\"nodes\"])==4'"

echo "-- the stack: chosen at start, kept across a restart"
stack_of() { "$O2CTL" --rundir "$RUN" --json config | jq -r .stack; }
check_eq "o2cb when cluster.conf names none" o2cb "$(stack_of)"
check "o2ctl config names it" sh -c "'$O2CTL' --rundir '$RUN' config | grep -qx '  stack       o2cb'"
CONF_STACK=pcmk write_conf n1:1:127.0.0.2 n2:2:127.0.0.3 n5:5:127.0.0.6 n6:6:127.0.0.7
expect_error "a reload does not switch to pcmk" "stack o2cb -> pcmk refused" \
    "$O2CTL" --rundir "$RUN" reload
check_eq "... and the stack stays o2cb" o2cb "$(stack_of)"
check "nmd --stack-is pcmk: true for the file" "$BUILD/nmd" -c "$CONF" -t "$TUN" --node n1 --stack-is pcmk
check_eq "nmd --stack-is o2cb: 1 (a unit's condition fails)" 1 \
    "$("$BUILD/nmd" -c "$CONF" -t "$TUN" --node n1 --stack-is o2cb >/dev/null; echo $?)"
check_eq "nmd --stack-is on a bad file: 255 (the unit fails)" 255 \
    "$("$BUILD/nmd" -c /nonexistent -t "$TUN" --node n1 --stack-is o2cb 2>/dev/null; echo $?)"
cp "$DIR/good.conf" "$CONF"
check "back to o2cb" "$O2CTL" --rundir "$RUN" reload

echo "-- the same tree through nmd.sock"
check "o2ctl mkdir" "$O2CTL" --rundir "$RUN" mkdir cluster/alpha/node/n9
check "o2ctl set" "$O2CTL" --rundir "$RUN" set cluster/alpha/node/n9/ipv4_port 7777
expect_error "o2ctl set follows the same rules" "Invalid argument" \
    "$O2CTL" --rundir "$RUN" set cluster/alpha/node/n9/num 9
check "o2ctl rmdir" "$O2CTL" --rundir "$RUN" rmdir cluster/alpha/node/n9
check "n9 gone from the tree" test ! -e "$C/node/n9"

echo "-- crashes and restarts"
expect_error "a second nmd on the same runtime dir" "already" \
    "$BUILD/nmd" -c "$CONF" -t "$TUN" --node n1 --rundir "$RUN"
kill -9 "$NMD_PID"
wait "$NMD_PID" 2>/dev/null
NMD_PID=
check "the tree of a killed nmd is stale" sh -c "! ls $C >/dev/null 2>&1"
start_nmd
check "nmd restarts over the stale mount" kill -0 "$NMD_PID"
check_eq "tree back" "n1 n2 n5 n6" "$(ls "$C/node" | xargs)"
check_eq "the stack back from the state file" o2cb "$(stack_of)"
check "clean stop unmounts" sh -c "kill $NMD_PID && wait_pid=$NMD_PID; while kill -0 \$wait_pid 2>/dev/null; do sleep 0.05; done; ! grep -q ' $RUN/config ' /proc/self/mountinfo"
NMD_PID=

echo "-- netd before nmd: it waits in its event loop"
start_netd() {
	"$BUILD/netd" -c "$CONF" -t "$TUN" --node n1 --rundir "$RUN" >>"$DIR/netd.log" 2>&1 &
	NETD_PID=$!
}
stop_netd() {	# NETD_RC: 0 for a stop it handled, 143 if SIGTERM killed it
	NETD_RC=0
	kill -TERM "$NETD_PID"
	wait "$NETD_PID" || NETD_RC=$?
	NETD_PID=
}
start_netd
check "netd waits for nmd" wait_for 5 grep -q "nmd.sock; retrying" "$DIR/netd.log"
stop_netd
check_eq "a stop while it waits is handled" 0 "$NETD_RC"
check "... as its log says" grep -q "signal 15: stopping" "$DIR/netd.log"
start_netd
start_nmd
check "netd serves once nmd is up" wait_for 10 "$O2CTL" --rundir "$RUN" ping netd
stop_netd
check_eq "netd stops" 0 "$NETD_RC"
check "nmd stops" sh -c "kill $NMD_PID; while kill -0 $NMD_PID 2>/dev/null; do sleep 0.05; done"
NMD_PID=

finish
