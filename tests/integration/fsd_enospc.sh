#!/usr/bin/env bash
# fsd on a full volume: writes, creates and mkdir fail with ENOSPC and
# change nothing (the aborted handles leave no trace), deleting gives the
# space back at once (the truncate log is flushed on demand, deletions
# under way are waited for), and fsck is
# clean throughout.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
rm -f "$D/v.img"
truncate -s 64M "$D/v.img"
check "mkfs (64 MB)" bash -c "mkfs.ocfs2 -q -F -M local --fs-feature-level=max-compat -b 4096 -C 4096 '$D/v.img' </dev/null >/dev/null 2>&1"
run_check "mount" fsd_mount "$D/v.img" "$MNT"
expect_error "filling the volume ends in ENOSPC" "No space left" \
    dd if=/dev/zero of="$MNT/fill" bs=1M count=100 status=none
check "the partial file is readable" cmp "$MNT/fill" <(head -c "$(stat -c %s "$MNT/fill")" /dev/zero)
fill_creates() {	# create until the inode allocator cannot grow
	local i
	for i in $(seq 1 5000); do : >"$MNT/e$i" || return 0; done
	return 1
}
check "creating files ends in ENOSPC" fill_creates
expect_error "mkdir on a full volume" "No space left" mkdir "$MNT/dir"
check_eq "df says full" "0" "$(df --output=avail "$MNT" | tail -n 1 | tr -d ' ')"
run_check "unmount the full volume" fsd_umount "$MNT"
check "fsck clean when full" fsck_clean "$D/v.img"
run_check "mount again" fsd_mount "$D/v.img" "$MNT"
check "delete the big file" rm "$MNT/fill"
# the inode goes when the kernel forgets it: that may take a moment
check "the space comes back" wait_for 10 bash -c "[ \$(df --output=avail '$MNT' | tail -n 1) -gt 30000 ]"
check "and is usable" dd if=/dev/zero of="$MNT/again" bs=1M count=20 status=none
check "mkdir works again" mkdir "$MNT/dir"
# No pause between the delete and the next write: the deletion (FORGET,
# then freeing the extents) may still be under way when the writes run
# out of space, and they must wait for it rather than fail.
rewrite_loop() {
	local i mb
	rm -f "$MNT/again"
	sync "$MNT"
	mb=$(( $(df --output=avail "$MNT" | tail -n 1) * 9 / 10 / 1024 ))
	for i in $(seq 1 10); do
		dd if=/dev/zero of="$MNT/big" bs=1M count=$mb conv=fsync status=none || return 1
		rm "$MNT/big" || return 1
	done
}
check "fill 90% of the free space, delete, again at once, 10 times" rewrite_loop
run_check "unmount" fsd_umount "$MNT"
check "fsck clean at the end" fsck_clean "$D/v.img"

finish
