#!/usr/bin/env bash
# mount.fuse.fsd, the helper behind `mount -t fuse.fsd DEVICE DIR` and
# fstab: it returns once the volume is mounted, leaves fsd serving it,
# reports fsd's reason when the mount fails, and `umount` ends fsd with
# the volume clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

HELPER=$BUILD/mount.fuse.fsd
IMG=$FSD_DIR/vol.img
MNT=$FSD_DIR/mnt
mkdir -p "$MNT"
FSD_MOUNTS+=("$MNT")
export FSD

fsd_of() { pgrep -f -- "$BUILD/fsd.* $IMG $MNT"; }
gone() { ! fsd_of >/dev/null; }

check "mkfs" mkfs_img "$IMG" -M local --fs-feature-level=max-compat
check "the helper returns once the volume is mounted" \
    "$HELPER" "$IMG" "$MNT" -o rw,_netdev,noatime
check_eq "mounted as fuse.ocfs2" fuse.ocfs2 "$(findmnt -n -o FSTYPE --mountpoint "$MNT")"
check "fsd keeps serving it after the helper returned" fsd_of
check "a file written through it" sh -c "echo hello >'$MNT/f' && sync '$MNT/f'"
check_eq "reads back" hello "$(cat "$MNT/f")"
check "umount" umount "$MNT"
check "fsd ends after umount" wait_for 20 gone
check "fsck clean after the helper's mount" fsck_clean "$IMG"

FSD_LOG=$FSD_DIR/fsd.log "$HELPER" "$IMG" "$MNT" -o ro >/dev/null 2>&1
check_eq "-o ro mounts read-only" ro "$(findmnt -n -o OPTIONS --mountpoint "$MNT" | cut -d, -f1)"
check_eq "the file is there" hello "$(cat "$MNT/f")"
check "FSD_LOG gets fsd's log" grep -q mounted "$FSD_DIR/fsd.log"
umount "$MNT"
wait_for 20 gone

truncate -s 64M "$FSD_DIR/junk.img"
expect_error "not an OCFS2 volume: exit 32 with fsd's reason" "cannot mount" \
    "$HELPER" "$FSD_DIR/junk.img" "$MNT"
rc=0; "$HELPER" "$FSD_DIR/junk.img" "$MNT" >/dev/null 2>&1 || rc=$?
check_eq "mount(8)'s failure status" 32 "$rc"
expect_error "a missing device" "no such device" "$HELPER" "$FSD_DIR/none" "$MNT"
expect_error "usage" "usage" "$HELPER" "$IMG"
check "nothing left mounted" sh -c "! mountpoint -q '$MNT'"

finish
