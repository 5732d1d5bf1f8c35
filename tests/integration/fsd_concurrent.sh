#!/usr/bin/env bash
# fsd's multithreaded session under concurrent writers (one shared
# directory and private trees: create, write, mkdir, rename across
# directories, rm -r) and readers (ls -lR, find + cat) at once: every
# writer's result is exactly what it did, fsd logs no problem, and the
# volume is fsck-clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
N=${FSD_CONCURRENT_ITER:-80}

writer() {	# writer ID: files in a shared dir, moved into its own tree
	local id=$1 i
	for i in $(seq 1 "$N"); do
		head -c $((i * 97)) "$D/rand" >"$MNT/shared/w$id-$i" || return 1
		mkdir -p "$MNT/w$id/d$i" || return 1
		mv "$MNT/shared/w$id-$i" "$MNT/w$id/d$i/f" || return 1
		if [[ $((i % 4)) -eq 0 ]]; then rm -r "$MNT/w$id/d$((i - 1))" || return 1; fi
	done
}
reader() {
	local i
	for i in $(seq 1 20); do
		ls -lR "$MNT" >/dev/null 2>&1
		find "$MNT" -type f -exec cat {} + >/dev/null 2>&1
	done
	return 0
}
# What writer ID must have left behind.
expected() {
	local i
	for i in $(seq 1 "$N"); do
		[[ $(((i + 1) % 4)) -eq 0 && $i -lt $N ]] && continue
		echo "d$i/f $((i * 97))"
	done | sort
}
actual() {
	(cd "$MNT/w$1" && find . -type f -printf '%P %s\n' | sort)
}
contents_ok() {
	local id=$1 i
	for i in $(seq 1 "$N"); do
		[[ -f $MNT/w$id/d$i/f ]] || continue
		cmp -s "$MNT/w$id/d$i/f" <(head -c $((i * 97)) "$D/rand") || { echo "w$id/d$i/f differs"; return 1; }
	done
}

head -c $((N * 97)) /dev/urandom >"$D/rand"
check "mkfs" mkfs_img "$D/v.img" -M local --fs-feature-level=max-compat -b 4096 -C 4096
run_check "mount" fsd_mount "$D/v.img" "$MNT"
mkdir "$MNT/shared"
pids=()
for id in 1 2 3 4; do writer "$id" & pids+=($!); done
reader & rpids=($!)
reader & rpids+=($!)
for id in 1 2 3 4; do
	run_check "writer $id finished without an error" wait "${pids[$((id - 1))]}"
done
wait "${rpids[@]}"
for id in 1 2 3 4; do
	check_eq "writer $id: names and sizes" "$(expected)" "$(actual "$id")"
	check "writer $id: contents" contents_ok "$id"
done
check_eq "the shared directory is empty again" "" "$(ls -A "$MNT/shared")"
check "fsd logged no problem" bash -c "! grep -E 'warning|error' '$MNT.log'"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"

finish
