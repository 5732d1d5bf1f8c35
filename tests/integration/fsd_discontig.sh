#!/usr/bin/env bash
# Discontiguous suballocator groups (discontig-bg, doc/discontig-bg.md).
# A 128 MiB volume of 4 KiB clusters is filled with files of 128 KiB and
# every other file is deleted: half the volume is free, but in holes of
# 32 clusters, none of the 1024 (4 MiB) an inode group takes. Then:
#  - with discontig-bg (alone, and with sparse,unwritten), new files need
#    a new inode group and get one made of several runs (debugfs.ocfs2
#    shows its extent list), a file written into the holes gets an extent
#    block, everything is deleted again and the free space comes back,
#    fsck.ocfs2 clean after each phase;
#  - without it, new files fail with ENOSPC once the inode group is used
#    up, as the kernel's would (it needs one contiguous run), and the
#    volume stays fsck clean;
#  - on two nodes, the node holding the slot of a discontiguous group
#    allocates from it while the other frees files of it into it.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
IMG=$D/v.img
FILE_KB=128

# fill: files of FILE_KB until the volume is full; echoes how many.
fill() {
	local i=0
	while head -c $((FILE_KB * 1024)) /dev/zero 2>/dev/null >"$MNT/f$i"; do
		i=$((i + 1))
	done
	rm -f "$MNT/f$i"
	echo "$i"
}

# fragment N: delete every other one of the N fill files.
fragment() {
	local i
	for ((i = 0; i < $1; i += 2)); do rm "$MNT/f$i" || return 1; done
}

# create_files PREFIX COUNT: COUNT empty files; stops at the first failure.
create_files() { create_files_in "$MNT" "$@"; }
create_files_in() {
	local i
	for ((i = 0; i < $3; i++)); do : >"$1/$2$i" || return 1; done
}

# free blocks and free inodes as statfs reports them
statfs_free() { stat -f -c '%f %d' "$MNT"; }

# inode_alloc's groups, one block number a line, as its chain records list them
inode_groups() {
	debugfs.ocfs2 -R "stat //inode_alloc:0000" "$IMG" 2>/dev/null |
	    awk '/^\t##   Total/ { t = 1; next } t && NF == 5 { print $5; next } { t = 0 }'
}

# group_extents BLKNO: how many extents the group at BLKNO has, as
# debugfs.ocfs2's "group" command shows its bg_list (0: contiguous)
group_extents() {
	debugfs.ocfs2 -R "group <$1>" "$IMG" 2>/dev/null |
	    sed -n 's/.*Next Free Rec: \([0-9]*\).*/\1/p'
}

# group_ranges BLKNO: "first last" block of each extent of the group at
# BLKNO (4 KiB blocks and clusters here, so a cluster is a block)
group_ranges() {
	debugfs.ocfs2 -R "group <$1>" "$IMG" 2>/dev/null |
	    awk '/^\t## Offset/ { t = 1; next } t && NF == 5 { print $4, $4 + $3 - 1 }'
}

# clusters_of PATH: the clusters debugfs.ocfs2 counts for PATH
clusters_of() {
	debugfs.ocfs2 -R "stat $1" "$IMG" 2>/dev/null | sed -n 's/.*Clusters: \([0-9]*\).*/\1/p'
}

remount() {
	fsd_umount "$MNT" && fsck_clean "$IMG" && fsd_mount "$IMG" "$MNT"
}

# discontig_phase FEATURES: the fragmented volume with discontig-bg and
# FEATURES, through new inode groups, an extent block and back.
discontig_phase() {
	local features=$1 ialloc0 root0 start end n old_groups new_groups g last grown
	echo "-- with $features"
	check "mkfs max-compat + $features" mkfs_img_size "$IMG" 128M -M local \
	    --fs-feature-level=max-compat --fs-features="$features" -b 4096 -C 4096
	ialloc0=$(clusters_of //inode_alloc:0000)
	root0=$(clusters_of /)
	run_check "mount" fsd_mount "$IMG" "$MNT"
	start=$(statfs_free)
	n=$(fill)
	check "the volume took $n files of $FILE_KB KiB" test "$n" -gt 600
	check "every other file deleted" fragment "$n"
	run_check "unmount, fsck clean after fragmenting, mount" remount
	old_groups=$(inode_groups)
	check "1000 new files, needing a new inode group" create_files g 1000
	run_check "unmount, fsck clean after the new group, mount" remount
	new_groups=$(inode_groups | grep -vxF "$old_groups")
	check "inode_alloc has a new group" test -n "$new_groups"
	for g in $new_groups; do
		echo "  new inode group at block $g:"
		debugfs.ocfs2 -R "group <$g>" "$IMG" 2>/dev/null | sed 's/^/    /' | head -n 9
		check "group $g is discontiguous ($(group_extents "$g") extents)" \
		    test "$(group_extents "$g")" -gt 1
	done
	last=$(debugfs.ocfs2 -R "stat /g999" "$IMG" 2>/dev/null)
	check "the last new inode is valid and names its group" \
	    bash -c "grep -q 'Flags: Valid' <<<'$last' && grep -q 'Sub Alloc Group [1-9]' <<<'$last'"
	check "a file written into the holes" dd if=/dev/zero of="$MNT/big" bs=1M count=45 \
	    conv=fsync status=none
	run_check "unmount, fsck clean with the big file, mount" remount
	check "the big file has an extent block below its inode" bash -c \
	    "debugfs.ocfs2 -R 'stat /big' '$IMG' 2>/dev/null | grep -q 'Tree Depth: [1-9]'"
	check "the big file reads back as written" cmp "$MNT/big" <(head -c $((45 << 20)) /dev/zero)
	check "delete everything" bash -c "rm -f '$MNT'/f* '$MNT'/g* '$MNT/big'"
	check "the space comes back" wait_for 15 bash -c \
	    "[ \$(stat -f -c %f '$MNT') -ge $(( ${start% *} - 2048 )) ]"
	check "new files again, from the groups there are" create_files h 1000
	check "and gone again" bash -c "rm -f '$MNT'/h*"
	run_check "unmount, fsck clean after deleting everything" remount
	end=$(statfs_free)
	run_check "unmount" fsd_umount "$MNT"
	check "fsck clean at the end" fsck_clean "$IMG"
	# What stays allocated: the inode groups (suballocators never shrink)
	# and the root directory's new blocks (directories never shrink).
	grown=$(( $(clusters_of //inode_alloc:0000) - ialloc0 + $(clusters_of /) - root0 ))
	check_eq "free blocks back to the start, less the new groups and directory blocks" \
	    "$(( ${start% *} - grown ))" "${end% *}"
}

discontig_phase discontig-bg
discontig_phase sparse,unwritten,discontig-bg

echo "-- without discontig-bg (as the kernel: a new group needs 4 MiB in one run)"
check "mkfs max-compat" mkfs_img_size "$IMG" 128M -M local \
    --fs-feature-level=max-compat -b 4096 -C 4096
run_check "mount" fsd_mount "$IMG" "$MNT"
n=$(fill)
check "the volume took $n files of $FILE_KB KiB" test "$n" -gt 600
check "every other file deleted" fragment "$n"
check "the space comes back" wait_for 15 bash -c "[ \$(stat -f -c %f '$MNT') -gt 10000 ]"
expect_error "new files end in ENOSPC although half the volume is free" "No space left" \
    create_files g 1000
check "half the volume is still free" test "$(stat -f -c %f "$MNT")" -gt 10000
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"

echo "-- two nodes"
# Made on a single-node mount (slot 0): a discontiguous inode group and
# files in it. Then node2 mounts first and takes slot 0, node1 slot 1.
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
CIMG=$D/shared.img
check "mkfs (cluster, discontig-bg)" mkfs_img_size "$CIMG" 160M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C 4096 -J size=8M --fs-feature-level=max-compat \
    --fs-features=discontig-bg
IMG=$CIMG
run_check "mount on one node" fsd_mount "$IMG" "$MNT"
n=$(fill)
check "every other file deleted" fragment "$n"
old_groups=$(inode_groups)
check "1000 new files" create_files g 1000
run_check "unmount" fsd_umount "$MNT"
DG=$(inode_groups | grep -vxF "$old_groups" | head -n 1)
check "slot 0 has a discontiguous inode group" test "$(group_extents "${DG:-0}")" -gt 1
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
run_check "node2 mounts first (slot 0)" node_mount 2
run_check "node1 mounts (slot 1)" node_mount 1
check "node1 sees node2's slot 0 files" test -e "${M[1]}/g999"
check "node1 deletes the files of the discontiguous group" bash -c "rm -f '${M[1]}'/g*"
check "node2 creates 1000 files, in slot 0's groups" create_files_in "${M[2]}" h 1000
check "node1 reads them" bash -c "[ \$(ls '${M[1]}' | grep -c '^h') -eq 1000 ]"
# node1 deletes the files of the discontiguous group first, so that its
# bits come free while node2 allocates (which of them node2 takes depends
# on the order of the frees and of its chain search)
in_group_first() {
	ls -i "${M[1]}" | awk -v ranges="$DG_RANGES" '
	    BEGIN { n = split(ranges, r, " ") }
	    $2 ~ /^h/ { for (i = 1; i < n; i += 2) if ($1 >= r[i] && $1 <= r[i + 1]) { print $2; next }
	                rest[++m] = $2 }
	    END { for (i = 1; i <= m; i++) print rest[i] }'
}
DG_RANGES=$(group_ranges "$DG" | tr '\n' ' ')
check "the group's extents are known" test -n "$DG_RANGES"
check "node1 deletes them while node2 allocates more" bash -c \
    "$(declare -f in_group_first); M=([1]='${M[1]}'); DG_RANGES='$DG_RANGES'
     (cd '${M[1]}' && in_group_first | xargs rm -f) &
     for i in \$(seq 0 299); do : >'${M[2]}'/k\$i || exit 1; done; wait"
check "node2 sees only its new files" bash -c "[ \$(ls '${M[2]}' | grep -c '^[hk]') -eq 300 ]"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean after two nodes" fsck_clean "$IMG"
in_dg=0
for i in $(seq 0 299); do
	debugfs.ocfs2 -R "stat /k$i" "$IMG" 2>/dev/null | grep -q "Sub Alloc Group $DG\$" &&
	    in_dg=$((in_dg + 1))
done
check "node2's new files went into the discontiguous group ($in_dg of 300)" test "$in_dg" -gt 0
used=$(debugfs.ocfs2 -R "group <$DG>" "$IMG" 2>/dev/null |
    awk '/^\t##   Block#/ { getline; print $4; exit }')
check_eq "the group's used bits: its descriptor and those files" $((in_dg + 1)) "$used"

finish
