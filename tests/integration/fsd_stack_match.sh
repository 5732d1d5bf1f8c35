#!/usr/bin/env bash
# A volume mounts only on a node of its own cluster stack and cluster:
# on a node whose cluster.conf says `stack = pcmk` (nmd alone: fsd's
# checks come before it asks for the membership daemon), an o2cb volume
# is refused naming both stacks, a pcmk volume of another cluster naming
# both clusters, and the node's own pcmk volume passes both checks and
# goes on to pcmkd (not running here: named in the error); with
# -o nocluster it mounts and takes a write. A pcmk volume
# on an o2cb node is refused in fsd_mount_errors.sh. No mount is left.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

RUN=$FSD_DIR/run
CONF=$FSD_DIR/cluster.conf
TUN=$FSD_DIR/o2cb
NMD_PID=
cleanup() {
	if [[ -n $NMD_PID ]]; then
		kill "$NMD_PID" 2>/dev/null
		wait "$NMD_PID" 2>/dev/null
	fi
	umount -l "$RUN/config" 2>/dev/null
	fsd_cleanup
}
trap cleanup EXIT

: >"$TUN"
CONF_STACK=pcmk write_conf n1:1:127.0.0.2 n2:2:127.0.0.3
"$BUILD/nmd" -c "$CONF" -t "$TUN" --node n1 --rundir "$RUN" >"$FSD_DIR/nmd.log" 2>&1 &
NMD_PID=$!
check "nmd serves a pcmk node" wait_for 10 "$O2CTL" --rundir "$RUN" ping nmd
check_eq "its stack is pcmk" pcmk "$("$O2CTL" --rundir "$RUN" --json config | jq -r .stack)"

# refused DESC TEXT IMG: fsd on IMG exits 1 with "cannot mount IMG: TEXT", mounting nothing.
refused() {
	local desc=$1 text=$2 img=$3 dir=$FSD_DIR/mnt out rc=0
	mkdir -p "$dir"
	out=$(timeout 30 "$FSD" --rundir "$RUN" "$img" "$dir" 2>&1) || rc=$?
	if ((rc == 1)) && [[ $(grep -o 'cannot mount .*' <<<"$out" | tail -n 1) == "cannot mount $img: $text" ]] &&
	    ! mountpoint -q "$dir"; then
		pass "$desc"
	else
		fail "$desc (status $rc, expected 1 and \"cannot mount $img: $text\")"
		printf '%s\n' "$out" | sed 's/^/       | /' | tail -n 10
	fi
}

check "mkfs --cluster-stack=o2cb --cluster-name=alpha" mkfs_img_size "$FSD_DIR/o2cb.img" 64M --fs-feature-level=max-compat \
    --cluster-stack=o2cb --cluster-name=alpha -N 2
refused "an o2cb volume on a pcmk node is refused, naming both stacks" \
    'the volume uses cluster stack "o2cb" (cluster "alpha"); this node runs stack "pcmk"' \
    "$FSD_DIR/o2cb.img"
check "mkfs --cluster-stack=pcmk --cluster-name=other" mkfs_img_size "$FSD_DIR/other.img" 64M --fs-feature-level=max-compat \
    --cluster-stack=pcmk --cluster-name=other -N 2
refused "a pcmk volume of another cluster is refused, naming both clusters" \
    'the volume belongs to cluster "other", this node runs "alpha"' "$FSD_DIR/other.img"
check "mkfs --cluster-stack=pcmk --cluster-name=alpha" mkfs_img_size "$FSD_DIR/pcmk.img" 64M --fs-feature-level=max-compat \
    --cluster-stack=pcmk --cluster-name=alpha -N 2
refused "this node's own pcmk volume gets past both checks, to pcmkd" \
    "pcmkd is not running ($RUN/pcmkd.sock: No such file or directory)" "$FSD_DIR/pcmk.img"
check "nmd holds no heartbeat region afterwards" \
    sh -c "'$O2CTL' --rundir '$RUN' --json config | jq -e '.regions | length == 0'"
# The userspace-stack feature itself is fsd's: a local mount writes.
run_check "the pcmk volume mounts with -o nocluster" fsd_mount "$FSD_DIR/pcmk.img" "$FSD_DIR/local"
check "... and writes a file" sh -c "echo written >'$FSD_DIR/local/f' && sync '$FSD_DIR/local/f'"
run_check "... and unmounts" fsd_umount "$FSD_DIR/local"
check_eq "the file is on the volume" written \
    "$(debugfs.ocfs2 -R 'cat /f' "$FSD_DIR/pcmk.img" 2>/dev/null)"
for v in o2cb other pcmk; do
	check "fsck.ocfs2 -fn: $v.img clean" fsck_clean "$FSD_DIR/$v.img"
done
finish
