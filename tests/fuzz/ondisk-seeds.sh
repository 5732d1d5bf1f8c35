#!/usr/bin/env bash
# Seeds for fuzz_fsd_block and fuzz_fsd_journal from a volume that
# mkfs.ocfs2 makes now: its inodes of each kind (an inline directory,
# a directory with a block, the chain allocator, a local alloc, a
# truncate log, the journal's), a group descriptor, a directory block
# and the journal's first blocks, each behind the harness's header.
# Usage: tests/fuzz/ondisk-seeds.sh OUTDIR (OUTDIR/fsd_block, OUTDIR/fsd_journal)
set -eu

out=$1
img=$(mktemp /tmp/ocfs2-fuzz-seeds.XXXXXX)
trap 'rm -f "$img"' EXIT
truncate -s 64M "$img"
mkfs.ocfs2 -q -F -b 1024 -C 4096 -N 2 -L fuzz "$img" >/dev/null
mkdir -p "$out/fsd_block" "$out/fsd_journal"

dbg() { debugfs.ocfs2 -R "$1" "$img" 2>/dev/null; }
gen=$(dbg 'stat /' | sed -n 's/.*FS Generation: \([0-9]*\).*/\1/p')
# first extent's block of a file: the row under "## Offset ... Block#"
first_extent() { dbg "stat $1" | awk '/## Offset/ { getline; print $4; exit }'; }
first_group() { dbg "stat $1" | awk '/##   Block#/ { getline; print $2; exit }'; }

# seed NAME TYPE BLKNO: type 0 inode, 1 extent block, 2 group, 3 directory
seed() {
	local name=$1 type=$2 blk=$3
	{
		printf "\\x$(printf %02x "$type")\\x01\\x00"	# 1 KiB blocks, 4 KiB clusters
		printf "\\x$(printf %02x $((gen >> 24 & 255)))\\x$(printf %02x $((gen >> 16 & 255)))"
		printf "\\x$(printf %02x $((gen >> 8 & 255)))\\x$(printf %02x $((gen & 255)))"
		printf '\x00\x00\x00\x00'
		printf "\\x$(printf %02x $((blk >> 24 & 255)))\\x$(printf %02x $((blk >> 16 & 255)))"
		printf "\\x$(printf %02x $((blk >> 8 & 255)))\\x$(printf %02x $((blk & 255)))"
		printf '\x00'
		dd if="$img" bs=1024 skip="$blk" count=1 status=none
	} >"$out/fsd_block/$name"
}
ino() { dbg "ls -l //" | awk -v n="$1" '$NF == n { print $1; exit }'; }

seed inline-dir-inode 0 "$(dbg 'stat /' | sed -n 's/.*Inode: \([0-9]*\).*/\1/p')"
sysdir=$(ino .)
seed dir-inode 0 "$sysdir"
seed dir-block 3 "$(first_extent //)"
seed chain-inode 0 "$(ino global_bitmap)"
seed group 2 "$(first_group //global_bitmap)"
seed local-alloc-inode 0 "$(ino local_alloc:0000)"
seed truncate-log-inode 0 "$(ino truncate_log:0000)"
seed journal-inode 0 "$(ino journal:0000)"

# the journal file's first blocks: its superblock and a clean log
jblk=$(first_extent //journal:0000)
{ printf '\x01'; dd if="$img" bs=1024 skip="$jblk" count=4 status=none; } >"$out/fsd_journal/mkfs-journal"
