#!/usr/bin/env bash
# append-dio (mkfs.ocfs2 --fs-features=sparse,unwritten,inline-data,
# discontig-bg,append-dio on top of max-compat), one node. The volume
# mounts read-write, local and with cluster stack options; a default
# level volume is still refused, naming its first unsupported feature.
# O_DIRECT appends, overwrites and O_APPEND writes give the right bytes
# and leave no dio record behind; a small O_DIRECT file stays inline.
# fsd killed (SIGKILL) in the middle of an appending O_DIRECT write, once
# its dio record and clusters past i_size are committed and its data is
# written but not its size (FSD_TEST_DIO_PAUSE holds it there while
# the file it names exists): the
# journal holds the record; the next mount ends it: the inode is out of
# the orphan dir, OCFS2_DIO_ORPHANED_FL is clear, the size is what the
# last fsync made it, no cluster is left past it, the fsync'ed bytes are
# intact. The same on a volume without sparse. fsck.ocfs2 -fn is clean
# after each.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
IMG=$D/v.img
CS=4096
FEATURES=sparse,unwritten,inline-data,discontig-bg,append-dio

# dio_flags IMG PATH: the inode's i_flags (le32 at 0x2C) has OCFS2_DIO_ORPHANED_FL (0x2000)?
dio_flag() {
	local ino bs
	ino=$(dbg_ino "$1" "$2") bs=$(dbg_bs "$1")
	(( $(dd if="$1" bs="$bs" skip="$ino" count=1 status=none | od -An -tu4 -j44 -N4) & 0x2000 ))
}
dio_records() { debugfs.ocfs2 -R "ls -l //orphan_dir:0000" "$1" 2>/dev/null | grep -c 'dio-'; }
clusters() { debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Clusters: \([0-9]*\).*/\1/p'; }
size_of() { debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p'; }
dyn() { debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Dynamic Features: (\(0x[0-9a-f]*\)).*/\1/p'; }
# journal_has_record IMG INO: the dio record of inode INO (fsd's inode
# numbers are block numbers) in the slot's journal, committed, not yet home.
journal_has_record() {
	debugfs.ocfs2 -R "cat //journal:0000" "$1" 2>/dev/null | grep -ac "dio-$(printf %016x "$2")" |
	    grep -qv '^0$'
}
# fsd_mount with its appending O_DIRECT writes held before their size update.
mount_paused() { FSD_TEST_DIO_PAUSE=$D/pause fsd_mount "$@"; }
# paused_append IMG FILE SIZE: an O_DIRECT append of SIZE bytes to FILE
# held before its size update, then fsd killed with SIGKILL.
paused_append() {
	local ino
	ino=$(stat -c %i "$MNT/$2")
	: >"$D/pause"
	dappend "$MNT/$2" "$3" 1 >"$D/paused.out" 2>&1 &
	local writer=$!
	check "the append stops before its size update" wait_for 10 test -e "$D/pause.$ino"
	rm -f "$D/pause" "$D/pause.$ino"
	kill -9 "$FSD_PID"
	wait "$FSD_PID" 2>/dev/null
	wait "$writer" 2>/dev/null
	check "the writer saw no success" grep -q Error "$D/paused.out"
	umount -l "$MNT" 2>/dev/null
	check "the slot's journal holds the dio record" journal_has_record "$1" "$ino"
}
# crash_case IMG: the killed append on IMG, then what the next mount makes of it.
crash_case() {
	local img=$1
	run_check "mount with the crash point" mount_paused "$img" "$MNT"
	dappend "$MNT/f" 65536 5 fsync
	dmodel 65536 5 >"$D/f.model"
	paused_append "$img" f 1048576
	run_check "mount after the kill (recovers the slot)" fsd_mount "$img" "$MNT"
	check "the mount ended the dio record" grep -q 'appending O_DIRECT write of slot 0 undone' "$MNT.log"
	check_eq "the size is the last fsync'ed one" 327680 "$(stat -c %s "$MNT/f")"
	check "the fsync'ed bytes are intact" cmp "$MNT/f" "$D/f.model"
	run_check "unmount" fsd_umount "$MNT"
	check_eq "no dio record is left in the orphan dir" 0 "$(dio_records "$img")"
	check "OCFS2_DIO_ORPHANED_FL is clear" eval "! dio_flag '$img' /f"
	check_eq "no cluster is left past the size" 80 "$(clusters "$img" /f)"
	check "fsck clean" fsck_clean "$img"
}

echo "-- the volume mounts read-write"
check "mkfs --fs-features=$FEATURES" mkfs_img_size "$IMG" 64M -M local --fs-feature-level=max-compat \
    -b 4096 -C $CS --fs-features=$FEATURES
run_check "mount" fsd_mount "$IMG" "$MNT"
check "it is read-write" touch "$MNT/rw"
run_check "unmount" fsd_umount "$MNT"
check "mkfs with cluster stack options" mkfs_img_size "$D/c.img" 64M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C $CS --fs-feature-level=max-compat --fs-features=$FEATURES
run_check "the clustered volume mounts (nocluster)" fsd_mount "$D/c.img" "$D/cm"
check "it is read-write" touch "$D/cm/rw"
run_check "unmount" fsd_umount "$D/cm"
check "fsck clean" fsck_clean "$D/c.img"
check "mkfs at the default feature level" mkfs_img_size "$D/d.img" 64M -M local -b 4096 -C $CS
run_check "the default-level volume mounts read-write" fsd_mount "$D/d.img" "$D/dm"
dappend "$D/dm/a" 65536 4 fsync
dmodel 65536 4 >"$D/d.model"
check "O_DIRECT appends on it read back" cmp "$D/dm/a" "$D/d.model"
run_check "unmount" fsd_umount "$D/dm"
check "fsck clean" fsck_clean "$D/d.img"

echo "-- O_DIRECT writes"
run_check "mount" fsd_mount "$IMG" "$MNT"
dappend "$MNT/a" 65536 40 fsync
dmodel 65536 40 >"$D/a.model"
check "40 O_DIRECT appends of 64 KiB read back" cmp "$MNT/a" "$D/a.model"
dappend "$MNT/big" 1048576 3
dmodel 1048576 3 >"$D/big.model"
check "three 1 MiB O_DIRECT appends read back" cmp "$MNT/big" "$D/big.model"
python3 - "$MNT/a" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 8192)
buf.write(b"z" * 8192)
os.pwrite(fd, buf, 4096)
os.close(fd)
EOF
printf 'z%.0s' $(seq 1 8192) | dd of="$D/a.model" bs=1 seek=4096 conv=notrunc status=none
check "an O_DIRECT overwrite inside the file" cmp "$MNT/a" "$D/a.model"
python3 - "$MNT/a" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT | os.O_APPEND)
buf = mmap.mmap(-1, 4096)
buf.write(b"q" * 4096)
os.write(fd, buf)
os.close(fd)
EOF
printf 'q%.0s' $(seq 1 4096) >>"$D/a.model"
check "an O_DIRECT | O_APPEND write" cmp "$MNT/a" "$D/a.model"
dappend "$MNT/small" 512 2
check_eq "a small O_DIRECT file" 1024 "$(stat -c %s "$MNT/small")"
truncate -s 100000 "$MNT/gap"
dappend "$MNT/gap" 4096 1
check "an O_DIRECT append past a hole reads zeros before it" sh -c \
    "cmp -n 100000 '$MNT/gap' /dev/zero && test \$(stat -c %s '$MNT/gap') -eq 104096"
run_check "unmount" fsd_umount "$MNT"
check_eq "no dio record is left behind" 0 "$(dio_records "$IMG")"
check "OCFS2_DIO_ORPHANED_FL is clear" eval "! dio_flag '$IMG' /a && ! dio_flag '$IMG' /big"
check_eq "the small file stayed inline" 0x1 "$(dyn "$IMG" /small)"
check "fsck clean" fsck_clean "$IMG"

echo "-- fsd killed between the dio record and the size update"
crash_case "$IMG"
echo "-- the same without sparse (max-compat,append-dio)"
check "mkfs --fs-features=append-dio" mkfs_img_size "$D/n.img" 64M -M local \
    --fs-feature-level=max-compat -b 4096 -C $CS --fs-features=append-dio
crash_case "$D/n.img"

finish
