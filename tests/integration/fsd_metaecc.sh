#!/usr/bin/env bash
# metaecc (mkfs.ocfs2 --fs-features=metaecc with every other feature fsd
# serves): every metadata block fsd writes carries its CRC32 and Hamming
# check, every one it reads is verified (doc/metaecc.md).
#
# One node: files inline and in extents (an extent tree of depth 1),
# directories indexed and grown to blocks, xattrs inline, in a block and
# in buckets (values outside them too, freed with the file), renames and
# unlinks; remounted, all of it read back with no
# check failing; fsd killed after fsync'ed work, the journal replayed.
# Then on the unmounted image, one bit flipped in an inode, an extent
# block and a directory block: reads succeed, each correction logged with
# its block; two bits flipped in each: EIO for that object only, fsd up,
# the rest readable. A volume with metaecc alone: new directory blocks
# get trailers, and lost+found, which mkfs leaves a trailer short of a
# block, is read and grown. Two nodes write and read each other's work.
# fsck.ocfs2 -fn clean after each part.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
IMG=$D/ecc.img
FEATURES=metaecc,sparse,unwritten,inline-data,xattr,indexed-dirs,discontig-bg,append-dio

# first_rec IMG PATH: the block of the first record of PATH's extent list
# (an extent block at depth 1, else the first data or directory block).
first_rec() {
	debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | awk '/^[[:space:]]*## Offset/ { getline; print $4; exit }'
}

# flip IMG BLOCK OFFSET MASK: xor one byte of the block with MASK.
flip() {
	python3 - "$@" <<'EOF'
import sys
img, blk, off, mask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0), int(sys.argv[4], 0)
with open(img, "r+b") as f:
    f.seek(blk * 4096 + off)
    b = f.read(1)[0]
    f.seek(blk * 4096 + off)
    f.write(bytes([b ^ mask]))
EOF
}

# sparse_file PATH: 300 blocks, each in a cluster of its own with a hole
# between: more records than the inode holds (an extent block).
sparse_file() {
	python3 - "$1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(300):
    os.pwrite(fd, bytes([65 + i % 26]) * 4096, i * 8192)
os.close(fd)
EOF
}

# sums DIR: what every file under DIR holds and what xattrs it has.
sums() {
	(cd "$1" && find . -type f | sort | while read -r f; do
		printf '%s %s %s\n' "$f" "$(md5sum <"$f")" "$(getfattr -d --absolute-names "$f" 2>/dev/null | md5sum)"
	done) 2>&1
}

echo "-- one node: the usual operations"
check "mkfs --fs-features=$FEATURES" mkfs_img_size "$IMG" 128M -M local \
    --fs-feature-level=max-compat -b 4096 -C 4096 -J size=8M --fs-features=$FEATURES
run_check "mount" fsd_mount "$IMG" "$MNT"
mkdir "$MNT/d" "$MNT/c"
echo hello >"$MNT/c/one"
for i in $(seq 1 200); do echo "$i" >"$MNT/d/entry-with-a-longish-name-$i"; done
head -c 300000 /dev/urandom >"$MNT/big"
sparse_file "$MNT/sp"
setfattr -n user.small -v inline "$MNT/c/one"
for i in $(seq 1 30); do setfattr -n "user.blk$i" -v "$(printf 'v%.0s' $(seq 1 60))" "$MNT/big"; done
for i in $(seq 1 80); do setfattr -n "user.bucket-attribute-$i" -v "value-$i-$(printf 'w%.0s' $(seq 1 40))" "$MNT/d/entry-with-a-longish-name-1"; done
# values too big for a bucket's entry: kept in clusters of their own, their roots in the bucket
for i in 1 2 3; do setfattr -n "user.big-$i" -v "$(head -c 3000 /dev/zero | tr '\0' b)" "$MNT/d/entry-with-a-longish-name-1"; done
rm "$MNT"/d/entry-with-a-longish-name-2*
mv "$MNT/d/entry-with-a-longish-name-3" "$MNT/c/moved"
mkdir -p "$MNT/d/sub/deeper"
BEFORE=$(sums "$MNT")
BIGSUM=$(md5sum <"$MNT/big")
check_eq "the directory lists what is left" 188 "$(ls "$MNT/d" | wc -l)"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "an extent tree of depth 1" 1 "$(debugfs.ocfs2 -R 'stat /sp' "$IMG" 2>/dev/null |
    sed -n 's/.*Tree Depth: \([0-9]*\).*/\1/p' | head -n 1)"
XB=$(debugfs.ocfs2 -R 'stat /d/entry-with-a-longish-name-1' "$IMG" 2>/dev/null |
    sed -n 's/.*Extended Attributes Block: \([0-9]*\).*/\1/p')
# xb_flags (le16 at 32) has OCFS2_XATTR_INDEXED: the block roots a bucket tree
check_eq "a bucket tree (xattr block indexed)" 1 \
    "$(($(od -An -tu2 -j $((XB * 4096 + 32)) -N2 "$IMG") & 1))"
run_check "remount" fsd_mount "$IMG" "$MNT"
check_eq "everything reads back the same" "$BEFORE" "$(sums "$MNT")"
# each value freed in its own step, the bucket's check redone in between
check "the file with bucket values is deleted" rm "$MNT/d/entry-with-a-longish-name-1"
run_check "unmount" fsd_umount "$MNT"
BEFORE=$(grep -v '^\./d/entry-with-a-longish-name-1 ' <<<"$BEFORE")
check "no check failed or was corrected" bash -c "! grep -E 'metaecc|corrupt' '$MNT.log'"

echo "-- fsd killed after fsync'ed work: the replay"
run_check "mount" fsd_mount "$IMG" "$MNT" -o commit=1
for i in $(seq 1 20); do head -c $((i * 97)) /dev/urandom >"$MNT/c/k$i"; done
setfattr -n user.k -v after-crash "$MNT/c/k1"
mkdir "$MNT/c/kd"
sync "$MNT/c/k1"
SYNCED=$(sums "$MNT/c")
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "mount (replaying)" fsd_mount "$IMG" "$MNT"
check_eq "what was synced is there" "$SYNCED" "$(sums "$MNT/c")"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check "no check failed on the replayed blocks" bash -c "! grep -E 'metaecc|corrupt' '$MNT.log'"

echo "-- flipped bits on the image"
INO=$(dbg_ino "$IMG" /c/one)
EXT=$(first_rec "$IMG" /sp)
DIRB=$(first_rec "$IMG" /d)
check "found the inode, extent block and directory block" test -n "$INO" -a -n "$EXT" -a -n "$DIRB"
for b in "$INO" "$EXT" "$DIRB"; do dd if="$IMG" of="$D/save.$b" bs=4096 skip="$b" count=1 status=none; done
# inside the inline data, the extent records, the directory entries
flip "$IMG" "$INO" 0xd0 0x04
flip "$IMG" "$EXT" 0x100 0x04
flip "$IMG" "$DIRB" 0x20 0x01
run_check "mount with one bit wrong in each" fsd_mount "$IMG" "$MNT"
check_eq "the inode reads right" hello "$(cat "$MNT/c/one")"
check "the file behind the extent block reads right" bash -c "python3 -c '
import sys
d = open(sys.argv[1], \"rb\").read()
sys.exit(any(d[i * 8192:i * 8192 + 4096] != bytes([65 + i % 26]) * 4096 for i in range(300)))' '$MNT/sp'"
check_eq "the directory lists" 187 "$(ls "$MNT/d" | wc -l)"
for b in "$INO" "$EXT" "$DIRB"; do
	check "block $b: the correction logged" grep -q "block $b: metaecc corrected a single-bit error" "$MNT.log"
done
fusermount3 -u "$MNT"
wait "$FSD_PID" 2>/dev/null
for b in "$INO" "$EXT" "$DIRB"; do dd if="$D/save.$b" of="$IMG" bs=4096 seek="$b" conv=notrunc status=none; done
flip "$IMG" "$INO" 0xd0 0x04
flip "$IMG" "$INO" 0x180 0x01
flip "$IMG" "$EXT" 0x100 0x04
flip "$IMG" "$EXT" 0x300 0x10
flip "$IMG" "$DIRB" 0x20 0x01
flip "$IMG" "$DIRB" 0x40 0x02
run_check "mount with two bits wrong in each" fsd_mount "$IMG" "$MNT"
expect_error "the inode: EIO" "Input/output error" cat "$MNT/c/one"
expect_error "the file behind the extent block: EIO" "Input/output error" cat "$MNT/sp"
expect_error "the directory: EIO" "Input/output error" ls "$MNT/d"
check "fsd stays up" mountpoint -q "$MNT"
check_eq "other files read right" "$BIGSUM" "$(md5sum <"$MNT/big")"
check "... and other directories list" bash -c "ls '$MNT/c' | grep -qx moved"
check "the reason names the blocks" bash -c "grep -q 'corrupt metadata at block $INO: metaecc' '$MNT.log' && grep -q 'corrupt metadata at block $EXT: metaecc' '$MNT.log' && grep -q 'corrupt metadata at block $DIRB: metaecc' '$MNT.log'"
fusermount3 -u "$MNT"
wait "$FSD_PID" 2>/dev/null
for b in "$INO" "$EXT" "$DIRB"; do dd if="$D/save.$b" of="$IMG" bs=4096 seek="$b" conv=notrunc status=none; done
check "fsck clean with the blocks restored" fsck_clean "$IMG"

echo "-- metaecc alone: trailers on new directory blocks, lost+found as mkfs left it"
IMG2=$D/alone.img
check "mkfs --fs-features=metaecc" mkfs_img_size "$IMG2" 64M -M local \
    --fs-feature-level=max-compat -b 4096 -C 4096 -J size=4M --fs-features=metaecc
check_eq "mkfs leaves lost+found a trailer short of a block" 4032 \
    "$(debugfs.ocfs2 -R 'stat /lost+found' "$IMG2" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p')"
run_check "mount" fsd_mount "$IMG2" "$MNT"
check_eq "lost+found lists" "" "$(ls "$MNT/lost+found" 2>&1)"
for i in $(seq 1 120); do : >"$MNT/lost+found/a-name-of-some-length-$i"; done
mkdir "$MNT/a"
for i in $(seq 1 120); do : >"$MNT/a/a-name-of-some-length-$i"; done
run_check "unmount" fsd_umount "$MNT"
check_eq "lost+found grew by a block, as ocfs2_extend_dir grows it" 8128 \
    "$(debugfs.ocfs2 -R 'stat /lost+found' "$IMG2" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p')"
check "fsck clean" fsck_clean "$IMG2"
run_check "remount" fsd_mount "$IMG2" "$MNT"
check_eq "both directories list every entry" "120 120" \
    "$(ls "$MNT/lost+found" | wc -l) $(ls "$MNT/a" | wc -l)"
run_check "unmount" fsd_umount "$MNT"
check "no check failed" bash -c "! grep -E 'metaecc|corrupt' '$MNT.log'"

echo "-- two nodes"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
IMG=$D/eccshared.img
check "mkfs (cluster, $FEATURES)" mkfs_img_size "$IMG" 128M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C 4096 -J size=8M --fs-feature-level=max-compat \
    --fs-features=$FEATURES
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k"; done
mkdir "${M[1]}/n"
for i in $(seq 1 80); do echo "one $i" >"${M[1]}/n/from1-$i"; done
setfattr -n user.a -v from-node1 "${M[1]}/n/from1-1"
check_eq "node2 lists node1's directory" 80 "$(ls "${M[2]}/n" | wc -l)"
check_eq "node2 reads node1's xattr" from-node1 "$(getfattr --absolute-names --only-values -n user.a "${M[2]}/n/from1-1")"
for i in $(seq 1 80); do echo "two $i" >"${M[2]}/n/from2-$i"; done
rm "${M[2]}"/n/from1-1?
head -c 200000 /dev/urandom >"$D/blob"
cp "$D/blob" "${M[2]}/n/blob"
check_eq "node1 sees node2's changes" 151 "$(ls "${M[1]}/n" | wc -l)"
check "node1 reads node2's file" cmp "${M[1]}/n/blob" "$D/blob"
check_eq "node1 reads node2's small file" "two 77" "$(cat "${M[1]}/n/from2-77")"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"
check "no check failed on either node" bash -c "! { lc log 1 fsd; lc log 2 fsd; } 2>/dev/null | grep -E 'metaecc|corrupt metadata'"

finish
