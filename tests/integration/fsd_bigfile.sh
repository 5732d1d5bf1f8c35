#!/usr/bin/env bash
# fsd files past 4 GiB and 8 GiB: writes straddling the 4 GiB boundary
# and beyond 8 GiB (byte offsets that do not fit 32 bits), read back
# before and after a remount, size and st_blocks, truncation down across
# 4 GiB and growth again (zeros where the old tail was), a write past
# the volume's end refused with ENOSPC and nothing lost; fsck.ocfs2 -fn
# clean after each unmount. The same operations on a sparse host file
# give the expected bytes. max-compat volumes allocate every cluster up
# to the size, so the 10 GiB image must hold it all; zeroing it punches
# holes in the image, so it stays small on the host.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
MIRROR=$D/mirror
G=$((1 << 30))
head -c 20000 /dev/urandom >"$D/pat"

# put FILE OFFSET LEN [OFLAG]: LEN bytes of the pattern at byte OFFSET.
put() {
	dd if="$D/pat" of="$1" bs=4096 count="$3" iflag=count_bytes oflag=seek_bytes${4:+,$4} \
	    seek="$2" conv=notrunc status=none
}
# range FILE OFFSET LEN: the md5 of those bytes.
range() {
	dd if="$1" bs=1M skip="$2" count="$3" iflag=skip_bytes,count_bytes status=none | md5sum
}
# The places the test looks at: each write with a margin, a stretch of
# the zeros between them, and the last bytes.
RANGES="$((4 * G - 70000)) 140000 $((4 * G + 1000)) 10000 $((6 * G)) 1000000
$((8 * G - 4096)) 40000 $((8 * G + 5 * 4096)) 40000"
same_ranges() {
	local off len size bad=0
	while read -r off len; do
		[[ $(range "$1" "$off" "$len") == "$(range "$2" "$off" "$len")" ]] ||
		    { echo "differs at $off+$len"; bad=1; }
	done <<<"$RANGES"
	size=$(stat -c %s "$1")
	[[ $(range "$1" $((size - 9000)) 9000) == "$(range "$2" $((size - 9000)) 9000)" ]] ||
	    { echo "the end differs"; bad=1; }
	return $bad
}
# writes FILE: the same writes on the mirror and on fsd.
writes() {
	set -e
	put "$1" $((4 * G - 2048)) 6000	# across 4 GiB
	put "$1" $((4 * G + 1000)) 9000	# unaligned, past it
	put "$1" $((8 * G + 5 * 4096)) 8192	# past 8 GiB, block-aligned
	put "$1" $((8 * G - 100)) 300		# across 8 GiB
	set +e
}
# st_blocks with every cluster up to the size allocated (4K clusters).
full_blocks() { echo $((($(stat -c %s "$1") + 4095) / 4096 * 8)); }

check "mkfs (10 GiB, 4K blocks, 4K clusters)" mkfs_img_size "$D/v.img" 10G -M local \
    --fs-feature-level=max-compat -b 4096 -C 4096
: >"$MIRROR"
check "the writes on the host" writes "$MIRROR"
run_check "mount" fsd_mount "$D/v.img" "$MNT"
: >"$MNT/big"
check "the writes on fsd" writes "$MNT/big"
check_eq "size" "$(stat -c %s "$MIRROR")" "$(stat -c %s "$MNT/big")"
check_eq "st_blocks: every cluster up to the size" "$(full_blocks "$MNT/big")" \
    "$(stat -c %b "$MNT/big")"
check "the bytes read back" same_ranges "$MIRROR" "$MNT/big"
check "the image stayed sparse (under 1 GiB on the host)" \
    test "$(du -k "$D/v.img" | cut -f1)" -lt $((1 << 20))
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"
check_eq "debugfs: size and clusters" \
    "Size: $(stat -c %s "$MIRROR") Clusters: $((($(stat -c %s "$MIRROR") + 4095) / 4096))" \
    "$(debugfs.ocfs2 -R 'stat /big' "$D/v.img" 2>/dev/null | grep -oE 'Size: [0-9]+|Clusters: [0-9]+' | xargs)"

echo "-- remount, truncate across 4 GiB, grow again"
run_check "mount again" fsd_mount "$D/v.img" "$MNT"
check "the bytes after remount" same_ranges "$MIRROR" "$MNT/big"
for s in $((4 * G + 3000)) $((4 * G - 12345)) $((5 * G + 77))	; do
	truncate -s "$s" "$MIRROR"
	check "truncate to $s" truncate -s "$s" "$MNT/big"
	check_eq "... size" "$s" "$(stat -c %s "$MNT/big")"
	check_eq "... st_blocks" "$(full_blocks "$MIRROR")" "$(stat -c %b "$MNT/big")"
done
RANGES="$((4 * G - 70000)) 140000 $((4 * G + 1000)) 10000 $((5 * G - 1000)) 1077"
check "the bytes after truncating and growing" same_ranges "$MIRROR" "$MNT/big"
check "grow by writing past 8 GiB again" writes "$MNT/big"
writes "$MIRROR"
RANGES="$((4 * G - 70000)) 140000 $((8 * G - 4096)) 40000 $((8 * G + 5 * 4096)) 40000"
check "the bytes read back" same_ranges "$MIRROR" "$MNT/big"

echo "-- past the end of the volume"
# O_DIRECT: the error comes back from the write itself, not from a later flush
expect_error "a write at 12 GiB" "No space left" put "$MNT/big" $((12 * G)) 4096 direct
check_eq "the size is unchanged" "$(stat -c %s "$MIRROR")" "$(stat -c %s "$MNT/big")"
check "the bytes too" same_ranges "$MIRROR" "$MNT/big"
check "and a write in the free space still works" put "$MNT/small" 0 20000
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"

echo "-- a device that cannot punch holes: zeros are written"
echo "fallocate eopnotsupp" >"$D/iofault.ctl"
# a sanitized fsd wants its ASan runtime first in the list
PRELOAD="$(ldd "$FSD" | awk '/libasan/ {print $3}') $BUILD/tests/libiofault.so"
LD_PRELOAD=$PRELOAD IOFAULT_PATH=$D/v.img IOFAULT_CTL=$D/iofault.ctl \
    run_check "mount with fallocate failing" fsd_mount "$D/v.img" "$MNT"
check "stale data to free" bash -c "head -c 33554432 /dev/urandom >'$MNT/junk' && sync '$MNT/junk'"
check "freed" rm "$MNT/small" "$MNT/junk"
USED=$(du -k "$D/v.img" | cut -f1)
check "grow a file by 64 MiB" truncate -s 64M "$MNT/z"
check "it reads as zeros" cmp "$MNT/z" <(head -c 64M /dev/zero)
check "the zeros were written (the image grew by 64 MiB)" \
    test "$(du -k "$D/v.img" | cut -f1)" -ge $((USED + 65536))
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"

finish
