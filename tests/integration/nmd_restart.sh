#!/usr/bin/env bash
# A restarted nmd takes up its state file (<rundir>/nmd.state) instead of
# a tree made afresh from cluster.conf: what was made through the tree
# survives kill -9 and a clean stop; a changed cluster.conf is applied as
# a reload would; a corrupt state file is reported and nmd starts from
# cluster.conf. In a cluster, the region a mount holds survives kill -9
# of its node's nmd: hbd keeps heartbeating, no node sees another go down,
# writes go on, and the unmount still ends the region.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

DIR=$FSD_DIR/alone
RUN=$DIR/run
CONF=$DIR/cluster.conf
TUN=$DIR/o2cb
NMD_PID=

cleanup() {
	[[ -n ${HOLDER_PID:-} ]] && kill "$HOLDER_PID" 2>/dev/null
	[[ -n $NMD_PID ]] && kill -9 "$NMD_PID" 2>/dev/null
	umount -l "$RUN/config" 2>/dev/null
	watch_stop_all
	cluster_cleanup 3 fsd nmd hbd
}
lc_setup
trap cleanup EXIT
mkdir -p "$DIR"


start_nmd() {
	"$BUILD/nmd" -c "$CONF" -t "$TUN" --node n1 --rundir "$RUN" >>"$DIR/nmd.log" 2>&1 &
	NMD_PID=$!
	wait_for 10 "$O2CTL" --rundir "$RUN" ping nmd
}

kill9_nmd() {
	kill -9 "$NMD_PID" && wait "$NMD_PID" 2>/dev/null
	NMD_PID=
}

echo "-- nmd alone: the tree survives kill -9 and a clean stop"
write_conf n1:1:127.0.0.2 n2:2:127.0.0.3
: >"$TUN"
truncate -s 16M "$DIR/disk"
run_check "nmd starts" start_nmd
C=$RUN/config/cluster/alpha
R=$C/heartbeat/0123456789ABCDEF0123456789ABCDEF
check "mkdir a node through the tree" sh -c "mkdir '$C/node/n9' && echo 7000 >'$C/node/n9/ipv4_port' &&
    echo 10.0.0.9 >'$C/node/n9/ipv4_address' && echo 9 >'$C/node/n9/num'"
check "a node whose name needs escaping" mkdir "$C/node/odd name%"
check "o2ctl set idle_timeout_ms" "$O2CTL" --rundir "$RUN" set cluster/alpha/idle_timeout_ms 45000
check "a heartbeat region through the tree" sh -c "mkdir '$R' && echo 512 >'$R/block_bytes' &&
    echo 3 >'$R/start_block' && echo 255 >'$R/blocks' && echo '$DIR/disk' >'$R/dev'"
kill9_nmd
run_check "nmd starts again after kill -9" start_nmd
check_eq "the nodes are back" "n1 n2 n9 odd name%" "$(ls "$C/node" | xargs)"
check_eq "with their attributes" "9 10.0.0.9 7000" "$(cat "$C/node/n9/num" "$C/node/n9/ipv4_address" "$C/node/n9/ipv4_port" | xargs)"
check_eq "n1 is still the local node" 1 "$(cat "$C/node/n1/local")"
check_eq "idle_timeout_ms is back" 45000 "$(cat "$C/idle_timeout_ms")"
check_eq "the region is back" "512 3 255 $DIR/disk" "$(cat "$R/block_bytes" "$R/start_block" "$R/blocks" "$R/dev" | xargs)"
check "nmd logged what it restored" grep -q "restored $RUN/nmd.state: cluster alpha, 4 nodes, 1 heartbeat regions" "$DIR/nmd.log"
check "cluster.conf, unchanged, was not applied over it" sh -c "! grep -q 'changed since it was loaded' '$DIR/nmd.log'"
kill "$NMD_PID"
wait "$NMD_PID"
check_eq "a clean stop (SIGTERM)" 0 $?
NMD_PID=
check "the state file stays after a clean stop" test -s "$RUN/nmd.state"
run_check "nmd starts after the clean stop" start_nmd
check_eq "the tree is as it was" "n1 n2 n9 odd name%" "$(ls "$C/node" | xargs)"

echo "-- a client's holds across restarts of nmd"
U=FEDCBA9876543210FEDCBA9876543210
coproc HOLDER { exec "$BUILD/progs/nmd_holder" "$RUN"; }
# hold CMD...: one command to the holder; it must answer ok.
hold() {
	local r
	echo "$*" >&"${HOLDER[1]}"
	read -r -t 10 r <&"${HOLDER[0]}" || { echo "no answer"; return 1; }
	[[ $r == ok ]] || { echo "$r"; return 1; }
}
acquire() { hold acquire $U 512 3 255 "$DIR/disk"; }
cfg() { "$O2CTL" --rundir "$RUN" --json config; }
refs_of() { cfg | jq -r --arg u "$1" '[.regions[] | select(.name == $u) | .refs] | .[0] // "none"'; }
pins_of() { cfg | jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .pins'; }
refs_are() { [[ $(refs_of "$1") == "$2" ]]; }
pins_are() { [[ $(pins_of "$1") == "$2" ]]; }
restart_nmd() { kill9_nmd; start_nmd; }
run_check "a client acquires a region through its connection" acquire
run_check "and pins node n2" hold pin n2 heartbeat
run_check "kill -9 and restart of nmd" restart_nmd
check_eq "the region is still held, once" 1 "$(refs_of $U)"
check_eq "n2 is still pinned, once" 1 "$(pins_of n2)"
check "nmd logged whose it kept" grep -q "region $U stays held by pid $HOLDER_PID (nmd_holder)" "$DIR/nmd.log"
run_check "the client releases it from a new connection" hold reconnect
run_check "... release" hold release $U
check_eq "the region is gone" none "$(refs_of $U)"
run_check "it acquires the region again" acquire
run_check "kill -9 and restart of nmd" restart_nmd
run_check "it takes the region again on a new connection" hold reconnect
run_check "... acquire" acquire
check_eq "held once, not twice" 1 "$(refs_of $U)"
check "nmd logged it" grep -q "pid $HOLDER_PID holds region $U again" "$DIR/nmd.log"
run_check "that connection closes" hold reconnect
check_eq "and the region goes with it" none "$(refs_of $U)"
check "the pin not taken again lapses within 10 s of the restart" wait_for 15 pins_are n2 0
check "... and nmd says so" grep -q "pid $HOLDER_PID did not pin node n2 (heartbeat) again: unpinned" "$DIR/nmd.log"
run_check "it acquires the region again" acquire
run_check "kill -9 and restart of nmd" restart_nmd
check_eq "held" 1 "$(refs_of $U)"
HPID=$HOLDER_PID
eval "exec ${HOLDER[1]}>&-"
wait "$HPID" 2>/dev/null
check "the client exits: its region goes" wait_for 5 refs_are $U none
check "... as nmd says" grep -q "pid $HPID exited: its region hold on $U ends" "$DIR/nmd.log"

echo "-- a changed cluster.conf is applied as a reload would"
write_conf n1:1:127.0.0.2 n2:2:127.0.0.3 n4:4:127.0.0.5
kill9_nmd
run_check "nmd starts with the new cluster.conf" start_nmd
check "it says cluster.conf changed" grep -q "cluster.conf changed since it was loaded" "$DIR/nmd.log"
check_eq "n4 added, the tree's own nodes removed, as a reload does" "n1 n2 n4" "$(ls "$C/node" | xargs)"
check "the region stays" test -d "$R"

echo "-- a corrupt state file"
kill9_nmd
printf 'garbage\n' >>"$RUN/nmd.state"
run_check "nmd starts anyway" start_nmd
check "it says why the file is not used" grep -q "nmd.state is not usable (truncated: no end line); kept as $RUN/nmd.state.bad, starting from $CONF" "$DIR/nmd.log"
check "the bad file is kept aside" test -s "$RUN/nmd.state.bad"
check_eq "the tree is cluster.conf's" "n1 n2 n4" "$(ls "$C/node" | xargs)"
check "without the region" test ! -e "$R"
check "a new state file is written" grep -q "^node n4 4 127.0.0.5 $CONF_PORT 0$" "$RUN/nmd.state"
kill9_nmd
umount -l "$RUN/config" 2>/dev/null

echo "-- a cluster: kill -9 of node3's nmd while it has the volume mounted"
M=()
check "3 nodes up" lc up 3 --hb-interval-ms $IVL --dead-threshold $THR
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
for k in 1 2 3; do run_check "node$k mounts" node_mount "$k"; done
UUID=$(lc exec 3 "$O2CTL" --json config | jq -r '.regions[0].name')
for k in 1 2 3; do watch_start "$k" "$FSD_DIR/watch$k.json"; done
# no_node_down FILE: an hbwatch's JSON lines hold no node-down event.
no_node_down() {
	local ev
	ev=$(grep -v subscribed "$1" | jq -c 'select(.event == "node-down")') || return 1
	[[ -z $ev ]] || { printf '%s\n' "$ev"; return 1; }
}
pins() { lc exec 3 "$O2CTL" --json config | jq -c '[.nodes[] | .pins]'; }
refs() { lc exec 3 "$O2CTL" --json config | jq -r --arg u "$UUID" '[.regions[] | select(.name == $u) | .refs] | .[0] // "none"'; }
pins_before=$(pins)
check_eq "node3's nmd: the mount holds the region once" 1 "$(refs)"
check "node3 writes before" sh -c "echo before >'${M[3]}/f' && sync '${M[3]}/f'"
HBDLOG=$LOCALCLUSTER_DIR/node3/log/hbd.log
hbd_lost=$(grep -c "lost nmd" "$HBDLOG")
hbd_connected=$(grep -c "connected to nmd" "$HBDLOG")
kill -9 "$(cat "$LOCALCLUSTER_DIR/node3/pids/nmd.pid")"
check "node3's hbd sees nmd gone" wait_for 5 sh -c "test \$(grep -c 'lost nmd' '$HBDLOG') -gt $hbd_lost"
check "node3's nmd starts again" lc start 3
check "it kept fsd's hold on the region" grep -q "region $UUID stays held by pid $(cat "$LOCALCLUSTER_DIR/node3/pids/fsd.pid") (fsd)" "$LOCALCLUSTER_DIR/node3/log/nmd.log"
check "node3's hbd is connected again" wait_for 10 sh -c "test \$(grep -c 'connected to nmd' '$HBDLOG') -gt $hbd_connected"
# Long enough for a stopped region to be seen dead by every peer.
sleep $(((THR + 3) * IVL / 1000 + 1))
hb_region() { hb_status 3 | jq -e --arg u "$UUID" '.regions[] | select(.name == $u)' >/dev/null; }
check "node3's hbd still heartbeats on the region" hb_region
check "hbd did not stop it" sh -c "! grep -q 'its nmd item is gone' '$HBDLOG'"
for k in 1 2 3; do
	check "node$k saw no node go down" no_node_down "$FSD_DIR/watch$k.json"
	check "node$k sees 1 2 3 alive" live_is "$k" "1 2 3"
done
check_eq "the region is held once, as before" 1 "$(refs)"
check_eq "the nodes' pins are as before (taken again, not twice)" "$pins_before" "$(pins)"
check "node3 writes after" sh -c "echo after >>'${M[3]}/f' && sync '${M[3]}/f'"
check_eq "node1 reads both writes" "before after" "$(cat "${M[1]}/f" | xargs)"

echo "-- the unmount still ends node3's region"
check "node3 unmounts" lc umount 3
refs_none() { [[ $(refs) == none ]]; }
check "node3's nmd drops the region" wait_for 10 refs_none
check "... because fsd exited" grep -q "exited: its region hold on $UUID ends" "$LOCALCLUSTER_DIR/node3/log/nmd.log"
check "node3's hbd stops heartbeating on it" wait_for 10 eval '! hb_region'

check "node1 sees node3 stop" wait_for 10 live_is 1 "1 2"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
