#!/usr/bin/env bash
# Creates on a node whose inode allocator is full and cannot grow take
# inodes from another slot's allocator, as the kernel steals them
# (doc/allocation.md). A two-node cluster on a volume without
# discontig-bg: node2 grows its slot's inode allocator (files made and
# removed), node1 fragments the global bitmap (small pieces of one file
# between bigger ones of another, which is then removed), so that no free
# run of a whole group (cl_cpg clusters) is left at a low fill. Then
# workers on both nodes create at once, node1 more files than its own
# allocator holds: not one ENOSPC, node1's extra inodes come from
# node2's slot, and fsck.ocfs2 -fn is clean, before and after they are
# all removed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

D=$FSD_DIR
IMG=$D/shared.img
M=()
EXTRA=${FSD_STEAL_EXTRA:-400}	# creates beyond what node1's allocator holds
WORKERS=${FSD_STEAL_WORKERS:-8}	# per node

# creators DIR COUNT WORKERS: WORKERS processes create COUNT empty files
# in DIR between them; prints how many creates failed, and why.
creators() {
	python3 - "$@" <<'EOF'
import os, sys
from multiprocessing import Pool
d, count, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def work(w):
    errs = {}
    for i in range(w, count, workers):
        try:
            os.close(os.open(os.path.join(d, "f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
        except OSError as e:
            errs[e.strerror] = errs.get(e.strerror, 0) + 1
    return errs
total = {}
with Pool(workers) as p:
    for errs in p.map(work, range(workers)):
        for k, v in errs.items():
            total[k] = total.get(k, 0) + v
print(sum(total.values()), " ".join("%s:%d" % kv for kv in total.items()))
EOF
}

# inode_free SLOT: free bits of that slot's inode allocator.
inode_free() {
	debugfs.ocfs2 -R "stat //inode_alloc:$(printf %04d "$1")" "$IMG" 2>/dev/null |
	    sed -n 's/.*Bitmap Total: \([0-9]*\) *Used: \([0-9]*\).*/\1 \2/p' | { read -r t u; echo $((t - u)); }
}
used_pct() { df --output=pcent "${M[1]}" | tail -n 1 | tr -d ' %'; }
# from_slot SLOT FILE...: how many of the files' inodes came from slot SLOT
from_slot() {
	local s=$1 f n=0
	shift
	for f in "$@"; do
		debugfs.ocfs2 -R "stat /$f" "$IMG" 2>/dev/null | grep -q "Sub Alloc Slot: $s " && n=$((n + 1))
	done
	echo $n
}

check "mkfs (cluster, 2 slots, no discontig-bg)" mkfs_img_size "$IMG" 128M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C 4096 -J size=4M --fs-feature-level=max-compat \
    --fs-features=sparse,unwritten
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
run_check "node1 mounts" node_mount 1
run_check "node2 mounts" node_mount 2

echo "-- node2's inode allocator grows by a group, node1 fragments the bitmap"
mkdir "${M[2]}/n2" "${M[1]}/n1" "${M[1]}/frag"
check_eq "node2 makes 1500 files" "0 " "$(creators "${M[2]}/n2" 1500 4)"
check "and removes them" rm -r "${M[2]}/n2"
pieces=$(fragment "${M[1]}/frag/small" "${M[1]}/frag/big")
check "node1 fills the volume with small and big pieces ($pieces)" test "$pieces" -gt 500
check "and removes the big pieces" rm "${M[1]}/frag/big"
check "the space comes back" wait_for 20 sh -c "test \$(df --output=pcent '${M[1]}' | tail -n 1 | tr -d ' %') -lt 40"
fill=$(used_pct)
# the allocators as debugfs.ocfs2 reads them: with the volume unmounted
check "node2 unmounts" lc umount 2
check "node1 unmounts" lc umount 1
check "fsck clean with the bitmap fragmented" fsck_clean "$IMG"
own=$(inode_free 0)
other=$(inode_free 1)
run_check "node1 mounts again" node_mount 1
run_check "node2 mounts again" node_mount 2
echo "  volume ${fill}% full, free inodes: slot 0 $own, slot 1 $other"
check "slot 1 has inodes to spare" test "$other" -gt $((EXTRA + 300))

echo "-- both nodes create at once, node1 $EXTRA more files than its allocator holds"
n1=$((own + EXTRA))
creators "${M[1]}/n1" "$n1" "$WORKERS" >"$D/n1.out" &
BG+=($!)
mkdir "${M[2]}/n2"
creators "${M[2]}/n2" 300 "$WORKERS" >"$D/n2.out"
wait "${BG[@]}"
BG=()
check_eq "node1's $n1 creates at ${fill}% full: no error" "0 " "$(cat "$D/n1.out")"
check_eq "node2's 300 creates meanwhile: no error" "0 " "$(cat "$D/n2.out")"
check_eq "node2 sees node1's files" "$n1" "$(find "${M[2]}/n1" -type f | wc -l)"
check "node1 logs taking from slot 1" grep -q "taking from slot 1's" <(lc log 1 fsd)
sync "${M[1]}" "${M[2]}"
stolen=$(from_slot 1 "n1/f$((n1 - 1))" "n1/f$((n1 - 2))" "n1/f$((n1 - 3))")
check "node1's last inodes are slot 1's ($stolen of 3)" test "$stolen" -ge 1

echo "-- the volume"
check "node2 unmounts" lc umount 2
check "node1 unmounts" lc umount 1
check "fsck clean with stolen inodes" fsck_clean "$IMG"
run_check "node1 mounts again" node_mount 1
run_check "node2 mounts again" node_mount 2
check "node1 removes its files (freed into slot 1's allocator too)" rm -r "${M[1]}/n1"
check "node2 removes its files" rm -r "${M[2]}/n2"
check "node2 unmounts" lc umount 2
check "node1 unmounts" lc umount 1
check "fsck clean after the removals" fsck_clean "$IMG"
check_eq "slot 1's inodes all free again" "$other" "$(inode_free 1)"

finish
