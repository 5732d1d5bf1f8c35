#!/usr/bin/env bash
# fsd killed with SIGKILL at random points of a metadata- and data-heavy
# workload, many times over on one volume: after each remount (which
# replays the journal) every file whose fsync returned is there with its
# exact contents, and after each clean unmount fsck.ocfs2 -fn is clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
ROUNDS=${FSD_CRASH_ROUNDS:-8}
# mkfs.ocfs2's feature level: its default (what users' volumes have) unless told
LEVEL=${FSD_CRASH_LEVEL:-}
LIST=$D/synced.list
: >"$LIST"

# The workload: fsync'ed files are recorded (name, checksum) only once
# fsync returned; the scratch tree churns without fsync.
workload() {
	local round=$1 i=0 f sum
	mkdir -p "$MNT/keep" "$MNT/scratch/$round"
	while :; do
		i=$((i + 1))
		f=keep/r$round-f$i
		head -c $(((RANDOM * 7) % 200000 + 1)) /dev/urandom >"$D/src"
		sum=$(md5sum <"$D/src")
		cp "$D/src" "$MNT/$f" || return
		sync "$MNT/$f" || return
		printf '%s %s\n' "$f" "$sum" >>"$LIST"
		mkdir -p "$MNT/scratch/$round/d$i" || return
		printf 'x%.0s' $(seq 1 $((RANDOM % 3000))) >"$MNT/scratch/$round/d$i/t" || return
		mv "$MNT/scratch/$round/d$i" "$MNT/scratch/$round/e$i" || return
		[[ $((i % 3)) -eq 0 ]] && { rm -r "$MNT/scratch/$round/e$((i - 1))" || return; }
		truncate -s $((RANDOM % 5000)) "$MNT/scratch/$round/e$i/t" || return
	done
}

verify() {
	local f sum bad=0
	while read -r f sum; do
		if [[ "$(md5sum <"$MNT/$f" 2>&1)" != "$sum" ]]; then
			echo "lost or damaged: $f"
			bad=1
		fi
	done <"$LIST"
	return $bad
}

check "mkfs (${LEVEL:-default} level)" mkfs_img "$D/v.img" -M local ${LEVEL:+--fs-feature-level=$LEVEL} \
    -b 4096 -C 4096
for round in $(seq 1 "$ROUNDS"); do
	echo "-- round $round"
	run_check "mount (replaying what the last kill left)" fsd_mount "$D/v.img" "$MNT" -o commit=1
	check "every fsync'ed file is intact ($(wc -l <"$LIST") so far)" verify
	workload "$round" >/dev/null 2>&1 &
	WL=$!
	sleep "0.$((RANDOM % 9 + 1))"
	kill -9 "$FSD_PID"
	wait "$FSD_PID" 2>/dev/null
	wait "$WL" 2>/dev/null
	umount -l "$MNT" 2>/dev/null
	if [[ $((round % 2)) -eq 0 ]]; then
		# every other round: recover, unmount cleanly and let fsck judge
		run_check "mount after the kill" fsd_mount "$D/v.img" "$MNT"
		check "fsync'ed files intact after replay" verify
		run_check "clean unmount" fsd_umount "$MNT"
		check "fsck clean" fsck_clean "$D/v.img"
	fi
done
run_check "final mount" fsd_mount "$D/v.img" "$MNT"
check "every fsync'ed file is intact ($(wc -l <"$LIST") files)" verify
check "at least a few files were fsync'ed" test "$(wc -l <"$LIST")" -ge "$ROUNDS"
run_check "final unmount" fsd_umount "$MNT"
check "fsck clean at the end" fsck_clean "$D/v.img"

finish
