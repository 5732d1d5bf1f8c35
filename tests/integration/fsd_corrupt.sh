#!/usr/bin/env bash
# fsd and damaged metadata: garbage in an inode block, a wrong generation,
# a wrong self block number, impossible counts (in a file's extent list,
# and in the one a fifo keeps for its deletion to walk), a bad extent block
# and a bad directory block each give EIO for what depends on them, one logged
# reason naming the block, and nothing else: fsd stays up and the rest of
# the volume reads correctly.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

check "the libocfs2 fixture maker builds" build_populate
D=$FSD_DIR
IMG=$D/c.img
MNT=$D/mnt
head -c 50000 /dev/urandom >"$D/data"
check "mkfs" mkfs_img "$IMG" -M local --fs-feature-level=max-compat -b 4096 -C 4096
check "populate" bash -c "'$D/populate' '$IMG'" <<EOF
file /garbage $D/data
file /generation $D/data
file /selfblk $D/data
file /counts $D/data
file /healthy $D/data
mknod /fifo p 0 0
mkdir /dir
many /dir 300
interleave /i1 /i2 300
EOF
check "fsck clean before the damage" fsck_clean "$IMG"

B_GARBAGE=$(dbg_ino "$IMG" /garbage)
B_GEN=$(dbg_ino "$IMG" /generation)
B_SELF=$(dbg_ino "$IMG" /selfblk)
B_COUNTS=$(dbg_ino "$IMG" /counts)
B_FIFO=$(dbg_ino "$IMG" /fifo)
# The first leaf of /i1's depth-1 tree, and the second block of /dir.
B_LEAF=$(debugfs.ocfs2 -R "stat /i1" "$IMG" 2>/dev/null | awk '/Tree Depth: 1/ {t=1} t && $1 == "0" && NF == 4 {print $4; exit}')
B_DIR2=$(debugfs.ocfs2 -R "stat /dir" "$IMG" 2>/dev/null | awk '/Block#/ {getline; print $4 + 1; exit}')
check "found the blocks to damage" test -n "$B_GARBAGE" -a -n "$B_LEAF" -a -n "$B_DIR2" -a -n "$B_FIFO"

head -c 4096 /dev/urandom | dd of="$IMG" bs=4096 seek="$B_GARBAGE" conv=notrunc status=none
poke "$IMG" "$B_GEN" $((0x60)) 01020304			# i_fs_generation
poke "$IMG" "$B_SELF" $((0x50)) 0700000000000000	# i_blkno
poke "$IMG" "$B_COUNTS" $((0xC4)) ff00			# l_next_free_rec > l_count
poke "$IMG" "$B_FIFO" $((0xC0)) c800			# l_tree_depth 200
poke "$IMG" "$B_LEAF" 0 58				# "XXBLK01": bad signature
poke "$IMG" "$B_DIR2" 8 0300				# rec_len 3 in a directory block

run_check "mount the damaged volume" fsd_mount "$IMG" "$MNT" -o ro
LOG=$MNT.log
expect_error "garbage inode: EIO" "Input/output error" stat "$MNT/garbage"
expect_error "wrong generation: EIO" "Input/output error" cat "$MNT/generation"
expect_error "wrong self block number: EIO" "Input/output error" cat "$MNT/selfblk"
expect_error "impossible extent count: EIO" "Input/output error" cat "$MNT/counts"
expect_error "a fifo's impossible extent list: EIO" "Input/output error" stat "$MNT/fifo"
expect_error "bad extent block: EIO on read" "Input/output error" cat "$MNT/i1"
expect_error "bad directory block: EIO on listing" "Input/output error" ls "$MNT/dir"
# Again: still EIO, still no crash, and no second log line.
expect_error "garbage inode: EIO again" "Input/output error" stat "$MNT/garbage"
expect_error "bad extent block: EIO again" "Input/output error" cat "$MNT/i1"

check "fsd is still running" kill -0 "$FSD_PID"
check "an undamaged file reads correctly" cmp "$MNT/healthy" "$D/data"
debugfs.ocfs2 -R "cat /i2" "$IMG" >"$D/i2.ref" 2>/dev/null
check "the file interleaved with the damaged one reads correctly" cmp "$MNT/i2" "$D/i2.ref"
check "a name in the good first directory block is found" stat "$MNT/dir/f00000"
check "root lists" ls "$MNT"

logged() {	# logged BLOCK TEXT: exactly one line naming the block, with TEXT
	local n
	n=$(grep -c "block $1: .*$2" "$LOG")
	[[ $n -eq 1 ]] || { echo "$n lines for block $1 matching '$2'"; cat "$LOG"; return 1; }
}
check "logged once: garbage inode" logged "$B_GARBAGE" "bad signature"
check "logged once: generation" logged "$B_GEN" "generation 0x4030201"
check "logged once: self block number" logged "$B_SELF" "claims to be block 7"
check "logged once: counts" logged "$B_COUNTS" "impossible extent list"
check "logged once: the fifo's extent list" logged "$B_FIFO" "impossible extent list"
check "logged once: extent block" logged "$B_LEAF" "bad signature (expected EXBLK01)"
check "logged once: directory block" logged "$B_DIR2" "impossible length 3"

run_check "unmount" fsd_umount "$MNT"

echo "-- read-write: after corruption, no more writes"
run_check "mount the damaged volume read-write" fsd_mount "$IMG" "$MNT"
check "a write before any damage is seen works" bash -c "echo ok >'$MNT/before'"
expect_error "the damaged inode: EIO" "Input/output error" stat "$MNT/garbage"
expect_error "then writes are refused" "Read-only file system" touch "$MNT/after"
check "reads still work" cmp "$MNT/healthy" "$D/data"
check "what was written before is there" grep -q ok "$MNT/before"
run_check "unmount" fsd_umount "$MNT"

finish
