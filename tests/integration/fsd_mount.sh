#!/usr/bin/env bash
# fsd read-write mount life cycle (doc/ondisk.md, Mount state): the slot
# is claimed and the journal marked dirty while mounted; a clean unmount
# empties the log, clears DIRTY_FL and frees the slot; after kill -9 the
# slot and the dirty journal stay, a read-only mount refuses, and the next
# read-write mount takes the slot back and recovers. A second fsd for the
# same node, or another node beside a live one, is refused. fsck -fn is
# clean after every unmount. The status socket (<rundir>/fsd-<UUID>.sock)
# reports the mount to o2ctl mounts, keeps a second fsd with the same
# runtime directory out while it answers, goes with the unmount, and a
# killed fsd's stale one is replaced.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
RUN=$D/run
mkdir -p "$RUN" "$D/m2"

slotmap() {	# the occupied slots as "slot:node ..."
	debugfs.ocfs2 -R slotmap "$1" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $2}' | xargs
}
jflags() {
	debugfs.ocfs2 -R "stat //journal:000${2:-0}" "$1" 2>/dev/null |
	    sed -n 's/.*Journal Flags: *\(.*\)/\1/p' | xargs
}
jstart() {
	debugfs.ocfs2 -R "logdump ${2:-0}" "$1" 2>/dev/null | sed -n 's/.*Start Log Blknum: \([0-9]*\).*/\1/p'
}
# mounts_are JQ-FILTER: o2ctl mounts --json in $RUN satisfies it.
mounts_are() {
	"$O2CTL" --rundir "$RUN" mounts --json | jq -e --arg m "$MNT" "$1"
}

for kind in local clustered; do
	IMG=$D/$kind.img
	echo "-- $kind volume"
	if [[ $kind == local ]]; then
		check "mkfs" mkfs_img "$IMG" -M local --fs-feature-level=max-compat -b 2048 -C 8192
	else
		check "mkfs" mkfs_img "$IMG" --fs-feature-level=max-compat --cluster-stack=o2cb \
		    --cluster-name=fsdtest -N 2 -b 4096 -C 4096
	fi
	check_eq "no slot in use" "" "$(slotmap "$IMG")"

	run_check "mount read-write" fsd_mount "$IMG" "$MNT" --rundir "$RUN"
	check_eq "slot 0 taken by node 0" "0:0" "$(slotmap "$IMG")"
	check "o2ctl mounts: its mountpoint, node 0, slot 0, read-write, no cluster" mounts_are \
	    'length == 1 and .[0].state == "mounted" and .[0].mountpoint == $m and
	     .[0].node == 0 and .[0].slot == 0 and (.[0].readonly | not) and (.[0].cluster | not)'
	expect_error "a second fsd with the same runtime directory is refused: the socket answers" \
	    "already serves volume" "$FSD" -o nocluster --rundir "$RUN" "$IMG" "$D/m2"
	check "the refused fsd left the live socket alone" mounts_are '.[0].state == "mounted"'
	check_eq "journal dirty while mounted" "Dirty" "$(jflags "$IMG")"
	check_eq "the log starts at s_first while mounted" "1" "$(jstart "$IMG")"
	check "reads work" ls -la "$MNT/lost+found"
	mkdir -p "$D/m2"
	if [[ $kind == local ]]; then
		expect_error "a second fsd is refused" "another fsd on this machine has this local volume mounted" \
		    "$FSD" "$IMG" "$D/m2"
	else
		expect_error "a second fsd for node 0 is refused" "node 0 already has this volume mounted" \
		    "$FSD" -o nocluster "$IMG" "$D/m2"
		expect_error "node 1 beside a live node 0 is refused" "slot 0 is in use by node 0" \
		    "$FSD" -o nocluster,node=1 "$IMG" "$D/m2"
	fi
	run_check "clean unmount" fsd_umount "$MNT"
	check_eq "slot freed" "" "$(slotmap "$IMG")"
	check_eq "journal clean" "" "$(jflags "$IMG")"
	check_eq "log empty (s_start 0)" "0" "$(jstart "$IMG")"
	check "fsck clean after unmount" fsck_clean "$IMG"
	check_eq "the socket goes with the unmount" "" "$(ls "$RUN")"
	run_check "mount read-only" fsd_mount "$IMG" "$MNT" --rundir "$RUN" -o ro
	check "o2ctl mounts: read-only, no slot" mounts_are \
	    '.[0].mountpoint == $m and .[0].readonly and .[0].slot == -1'
	run_check "unmount" fsd_umount "$MNT"

	echo "-- $kind volume: kill -9"
	run_check "mount read-write" fsd_mount "$IMG" "$MNT" --rundir "$RUN"
	kill -9 "$FSD_PID"
	wait "$FSD_PID" 2>/dev/null
	umount -l "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null
	check_eq "slot still taken after the crash" "0:0" "$(slotmap "$IMG")"
	check "o2ctl mounts: the killed fsd's socket is stale" mounts_are \
	    'length == 1 and .[0].state == "stale"'
	check_eq "journal still dirty" "Dirty" "$(jflags "$IMG")"
	expect_error "read-only mount refuses the dirty journal" "needs recovery" \
	    "$FSD" -o nocluster,ro "$IMG" "$D/m2"
	if [[ $kind == clustered ]]; then
		expect_error "another node refuses to share with the crashed one" \
		    "slot 0 is in use by node 0" "$FSD" -o nocluster,node=1 "$IMG" "$D/m2"
	fi
	run_check "read-write mount recovers" fsd_mount "$IMG" "$MNT" --rundir "$RUN"
	check "it took its own slot back" grep -q "slot 0 was already ours" "$MNT.log"
	check "and replaced the stale socket" grep -q "a stale socket, replaced" "$MNT.log"
	check "o2ctl mounts: mounted again" mounts_are 'length == 1 and .[0].state == "mounted"'
	check "and replayed its journal" grep -q "journal:0000: replayed" "$MNT.log"
	check "reads work" ls -la "$MNT/lost+found"
	run_check "clean unmount" fsd_umount "$MNT"
	check_eq "slot freed" "" "$(slotmap "$IMG")"
	check_eq "journal clean" "" "$(jflags "$IMG")"
	check "fsck clean after recovery" fsck_clean "$IMG"
	rm -f "$IMG"
done

finish
