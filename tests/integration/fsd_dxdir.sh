#!/usr/bin/env bash
# Indexed directories (mkfs.ocfs2 --fs-features=indexed-dirs on top of
# max-compat, with sparse,unwritten,inline-data): doc/indexed-dirs.md.
#
# One node (4K blocks, 4K clusters): a directory of N names (10,000 by
# default, FSD_DXDIR_N) created, looked up, every other one unlinked, a
# quarter renamed into another indexed directory; readdir lists exactly
# the names left, and a listing that goes on while names come and go
# sees every name that stays exactly once; after a remount the same from
# disk, debugfs.ocfs2 finds names through the index, its dx_dump counts
# what readdir lists, and each block's trailer and the free-space list
# (dx_space) agree with the entries; emptied, the directory is removed
# and its index freed. Names libocfs2 indexed are found and changed by
# fsd, and libocfs2 adds names to a directory fsd indexed; the same in a
# directory tunefs.ocfs2 indexed when it enabled the feature. 16K clusters
# (four leaves a cluster). Damaged roots, leaves and trailers: EIO and a
# logged reason naming the block. fsd killed with -9 while creating in
# an indexed directory (FSD_DXDIR_CRASH_ROUNDS rounds): after the replay
# the index agrees with the blocks. Two nodes creating in one shared
# indexed directory at the same time. fsck.ocfs2 -fn clean after each
# part. With FSD_DXDIR_SPEED=1 (make soak), a speed figure: creates and
# cold lookups of N names in an indexed directory and in a linear one
# (an inline-data volume without the feature), the same run.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
N=${FSD_DXDIR_N:-10000}
ROUNDS=${FSD_DXDIR_CRASH_ROUNDS:-1}
FEATURES=indexed-dirs,sparse,unwritten,inline-data

# dyn IMG PATH: the inode's dynamic features as debugfs.ocfs2 prints them ("0x8": indexed).
dyn() {
	debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null |
	    sed -n 's/.*Dynamic Features: (\(0x[0-9a-f]*\)).*/\1/p'
}

# dx_total IMG PATH: the names the index root counts ("Total Entry Count").
dx_total() {
	debugfs.ocfs2 -R "dx_dump $2" "$1" 2>/dev/null | sed -n 's/.*Total Entry Count: \([0-9]*\).*/\1/p'
}

# dx_entries IMG PATH: the entries dx_dump prints, over all leaves.
dx_entries() {
	debugfs.ocfs2 -R "dx_dump $2" "$1" 2>/dev/null | grep -cE '^[[:space:]]+[0-9]+ +\(0x'
}

# names OP DIR FIRST LAST STEP [DEST]: create/stat/unlink/rename names n000000.. in DIR.
names() {
	python3 - "$@" <<'EOF'
import os, sys
op, d, first, last, step = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
for i in range(first, last, step):
    p = "%s/n%06d-a-name-of-some-length" % (d, i)
    if op == "create":
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    elif op == "stat":
        os.stat(p)
    elif op == "unlink":
        os.unlink(p)
    elif op == "rename":
        os.rename(p, "%s/r%06d" % (sys.argv[6], i))
EOF
}

# listing_is DIR PYEXPR: readdir of DIR gives exactly the names PYEXPR builds.
listing_is() {
	python3 - "$1" "$2" <<'EOF'
import os, sys
got = os.listdir(sys.argv[1])
want = eval(sys.argv[2])
if len(got) != len(set(got)) or set(got) != want:
    print("listed %d (%d distinct), expected %d; missing %s, extra %s" % (len(got),
        len(set(got)), len(want), sorted(want - set(got))[:5], sorted(set(got) - want)[:5]))
    sys.exit(1)
EOF
}

# stable_listing DIR: a listing goes on while names come and go; every
# name there from start to end is seen exactly once.
stable_listing() {
	python3 - "$1" <<'EOF'
import os, sys
d = sys.argv[1]
before = set(os.listdir(d))
it = os.scandir(d)
seen = [next(it).name for _ in range(len(before) // 3)]
gone = sorted(before - set(seen))[::7][:300]
for n in gone:
    os.unlink(os.path.join(d, n))
for k in range(300):
    os.close(os.open(os.path.join(d, "late-%d" % k), os.O_CREAT | os.O_WRONLY, 0o644))
seen += [e.name for e in it]
stayed = before - set(gone)
dup = len(seen) - len(set(seen))
missing = stayed - set(seen)
if dup or missing:
    print("duplicates %d, missing %d of %d" % (dup, len(missing), len(stayed)))
    sys.exit(1)
for n in gone:
    os.close(os.open(os.path.join(d, n), os.O_CREAT | os.O_WRONLY, 0o644))
for k in range(300):
    os.unlink(os.path.join(d, "late-%d" % k))
EOF
}

# free_list_ok IMG DIR BLOCK-BYTES CLUSTER-BYTES: each block of the indexed
# directory DIR records its largest hole for a new entry in its trailer,
# and the free-space list (debugfs.ocfs2 dx_space) holds exactly the
# blocks with one, each once.
free_list_ok() {
	local stat space
	stat=$(debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null)
	space=$(debugfs.ocfs2 -R "dx_space $2" "$1" 2>/dev/null)
	python3 - "$1" "$3" "$4" "$stat" "$space" <<'EOF'
import re, struct, sys
img, bs, cs, stat, space = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
bpc = cs // bs
nblocks = int(re.search(r"Size: (\d+)", stat).group(1)) // bs
phys = {}
for m in re.finditer(r"^\s*\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+0x0\s*$", stat, re.M):
    cpos, clusters, blk = map(int, m.groups())
    for i in range(clusters * bpc):
        if cpos * bpc + i < nblocks:
            phys[cpos * bpc + i] = blk + i
if len(phys) != nblocks:
    sys.exit("found %d of the directory's %d blocks" % (len(phys), nblocks))
f = open(img, "rb")
with_room = set()
for lblk, blk in sorted(phys.items()):
    f.seek(blk * bs)
    data = f.read(bs)
    off, best = 0, 0
    while off < bs - 64:
        ino, rec, nlen = struct.unpack_from("<QHB", data, off)
        hole = rec - (((nlen + 12 + 3) & ~3) if ino else 0)
        best = max(best, hole)
        off += rec
    best = best if best >= 16 else 0
    recorded = struct.unpack_from("<H", data, bs - 64 + 14)[0]
    if recorded != best:
        sys.exit("block %d: trailer records %d free, the largest hole is %d" % (blk, recorded, best))
    if best:
        with_room.add(blk)
listed = [int(x) for x in re.findall(r"Trailer Block: (\d+)", space)]
if len(listed) != len(set(listed)) or set(listed) != with_room:
    sys.exit("free list %s, blocks with room %s" % (sorted(listed)[:8], sorted(with_room)[:8]))
EOF
}

# debugfs_finds IMG DIR STEP: debugfs.ocfs2 looks up every STEP-th name of DIR.
debugfs_finds() {
	local img=$1 dir=$2 step=$3 n req=
	for n in $(ls "$MNT$dir" | sort | awk -v s="$step" 'NR % s == 1'); do
		req+="stat $dir/$n"$'\n'
	done
	! debugfs.ocfs2 -f <(printf '%s' "$req") "$img" 2>&1 | grep -q 'not found'
}

echo "-- one node, $N names (4K blocks, 4K clusters)"
IMG=$D/dx.img
check "mkfs --fs-features=$FEATURES" mkfs_img "$IMG" -M local -b 4096 -C 4096 \
    --fs-feature-level=max-compat --fs-features=$FEATURES
run_check "mount" fsd_mount "$IMG" "$MNT"
mkdir "$MNT/big" "$MNT/other"
t0=$(date +%s.%N)
check "$N creates" names create "$MNT/big" 0 "$N" 1
t1=$(date +%s.%N)
check "$N lookups" names stat "$MNT/big" 0 "$N" 1
check "a name twice is EEXIST" bash -c "! ( set -o noclobber; : >'$MNT/big/n000007-a-name-of-some-length' ) 2>/dev/null"
check "every other name unlinked" names unlink "$MNT/big" 0 "$N" 2
check "... gone" bash -c "[[ ! -e '$MNT/big/n000000-a-name-of-some-length' && ! -e '$MNT/big/n000100-a-name-of-some-length' ]]"
check "a quarter renamed into another directory" names rename "$MNT/big" 1 "$N" 4 "$MNT/other"
check "readdir lists exactly the names left" listing_is "$MNT/big" \
    "set('n%06d-a-name-of-some-length' % i for i in range(3, $N, 4))"
check "... and the renamed ones in the other directory" listing_is "$MNT/other" \
    "set('r%06d' % i for i in range(1, $N, 4))"
check "a listing stays complete while names come and go" stable_listing "$MNT/big"
check "the names left are found" names stat "$MNT/big" 3 "$N" 4
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "both directories are indexed" "0x8 0x8" "$(dyn "$IMG" /big) $(dyn "$IMG" /other)"
check_eq "dx_root counts the names and . .." "$((N / 4 + 2)) $((N / 4 + 2))" \
    "$(dx_total "$IMG" /big) $(dx_total "$IMG" /other)"
check_eq "dx_dump lists an entry for each" "$((N / 4 + 2))" "$(dx_entries "$IMG" /big)"
check "the free-space lists hold the blocks with room" bash -c \
    "$(declare -f free_list_ok); free_list_ok '$IMG' /big 4096 4096 && free_list_ok '$IMG' /other 4096 4096"
run_check "mount again" fsd_mount "$IMG" "$MNT"
check "readdir from disk" listing_is "$MNT/big" \
    "set('n%06d-a-name-of-some-length' % i for i in range(3, $N, 4))"
check "lookups from disk" python3 -c "
import os
for i in range(1, $N, 4): os.stat('$MNT/other/r%06d' % i)"
check "debugfs.ocfs2 finds fsd's names through the index" debugfs_finds "$IMG" /big 50
names unlink "$MNT/big" 3 "$N" 4
check "emptied: only . and .." listing_is "$MNT/big" "set()"
check "rmdir of the emptied directory" rmdir "$MNT/big"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"

echo "-- names libocfs2 indexed"
run_check "build the libocfs2 populator" build_populate
IMG=$D/dxpop.img
check "mkfs" mkfs_img "$IMG" -M local -b 4096 -C 4096 --fs-feature-level=max-compat \
    --fs-features=$FEATURES
check "libocfs2 makes a directory of 600 names" bash -c \
    "printf 'mkdir /p\nmany /p 600\n' | '$FSD_DIR/populate' '$IMG'"
check_eq "... indexed" 0x8 "$(dyn "$IMG" /p)"
run_check "mount" fsd_mount "$IMG" "$MNT"
check "fsd finds every name libocfs2 indexed" python3 -c "
import os
for i in range(600): os.stat('$MNT/p/f%05d' % i)"
check "fsd removes some and adds its own" python3 -c "
import os
for i in range(0, 600, 3): os.unlink('$MNT/p/f%05d' % i)
for i in range(400): open('$MNT/p/mine-%d' % i, 'w').close()"
mkdir "$MNT/q"
names create "$MNT/q" 0 500 1
names unlink "$MNT/q" 0 500 5
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "dx_root counts them" $((400 + 400 + 2)) "$(dx_total "$IMG" /p)"
check "libocfs2 adds 300 names to a directory fsd indexed" bash -c \
    "printf 'many /q 300\n' | '$FSD_DIR/populate' '$IMG'"
check "fsck clean" fsck_clean "$IMG"
run_check "mount" fsd_mount "$IMG" "$MNT"
check "fsd finds libocfs2's names and its own" python3 -c "
import os
for i in range(300): os.stat('$MNT/q/f%05d' % i)
for i in range(500):
    if i % 5: os.stat('$MNT/q/n%06d-a-name-of-some-length' % i)"
run_check "unmount" fsd_umount "$MNT"

echo "-- a volume tunefs.ocfs2 gave indexed-dirs"
IMG=$D/dxtune.img
check "mkfs without the feature" mkfs_img "$IMG" -M local -b 4096 -C 4096 \
    --fs-feature-level=max-compat
check "libocfs2 makes a directory of 300 names" bash -c \
    "printf 'mkdir /old\nmany /old 300\n' | '$FSD_DIR/populate' '$IMG'"
check "tunefs.ocfs2 --fs-features=indexed-dirs" tunefs.ocfs2 --fs-features=indexed-dirs "$IMG"
check_eq "... indexes it" 0x8 "$(dyn "$IMG" /old)"
run_check "mount" fsd_mount "$IMG" "$MNT"
check "fsd finds, removes and adds names in it" python3 -c "
import os
for i in range(300): os.stat('$MNT/old/f%05d' % i)
for i in range(0, 300, 2): os.unlink('$MNT/old/f%05d' % i)
for i in range(600): open('$MNT/old/new%d' % i, 'w').close()"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check "the free-space list holds the blocks with room" free_list_ok "$IMG" /old 4096 4096

echo "-- 16K clusters: four leaves a cluster"
IMG=$D/dx16k.img
check "mkfs -C 16384" mkfs_img "$IMG" -M local -b 4096 -C 16384 --fs-feature-level=max-compat \
    --fs-features=$FEATURES
run_check "mount" fsd_mount "$IMG" "$MNT"
mkdir "$MNT/d"
check "2000 creates" names create "$MNT/d" 0 2000 1
check "every third unlinked" names unlink "$MNT/d" 0 2000 3
check "the rest found" names stat "$MNT/d" 1 2000 3
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "dx_root counts them" $((2000 - 667 + 2)) "$(dx_total "$IMG" /d)"
check "the free-space list holds the blocks with room" free_list_ok "$IMG" /d 4096 16384

echo "-- a damaged index root, leaf or trailer: EIO naming the block"
IMG=$D/dxbad.img
check "mkfs" mkfs_img "$IMG" -M local -b 4096 -C 4096 --fs-feature-level=max-compat \
    --fs-features=$FEATURES
run_check "mount" fsd_mount "$IMG" "$MNT"
mkdir "$MNT/d"
names create "$MNT/d" 0 600 1
run_check "unmount" fsd_umount "$MNT"
ROOT=$(debugfs.ocfs2 -R "dx_dump /d" "$IMG" 2>/dev/null | sed -n 's/.*Dir Index Root: \([0-9]*\).*/\1/p')
LEAF=$(debugfs.ocfs2 -R "dx_dump /d" "$IMG" 2>/dev/null | sed -n 's/.*Dir Index Leaf: \([0-9]*\).*/\1/p' | head -n 1)
DBLK=$(debugfs.ocfs2 -R "dx_dump /d" "$IMG" 2>/dev/null |
    sed -n 's/^[[:space:]]*2 *(0x[0-9a-f]* 0x[0-9a-f]*) *\([0-9]*\).*/\1/p' | head -n 1)
check "the index has a root, leaves and blocks" test -n "$ROOT" -a -n "$LEAF" -a -n "$DBLK"
# damaged IMG-COPY BLOCK OFFSET HEX: fsd gives EIO for lookups in /d and names the block.
damaged() {
	local img=$1 blk=$2 off=$3 hex=$4
	cp "$IMG" "$img"
	poke "$img" "$blk" "$off" "$hex"
	fsd_mount "$img" "$MNT" || return 1
	python3 - "$MNT/d" <<'EOF2'
import errno, os, sys
bad = 0
for i in range(600):
    try:
        os.stat("%s/n%06d-a-name-of-some-length" % (sys.argv[1], i))
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit("n%06d: %s" % (i, e))
        bad += 1
if bad == 0:
    sys.exit("no lookup failed")
EOF2
	local rc=$?
	grep -q "corrupt metadata at block $blk" "$MNT.log" || { echo "no reason naming block $blk"; rc=1; }
	fsd_umount "$MNT" || rc=1
	return $rc
}
check "a root with a bad signature" damaged "$D/bad1.img" "$ROOT" 0 5858585858585858
check "a leaf claiming another block" damaged "$D/bad2.img" "$LEAF" 16 ffffff
check "a trailer with a bad signature" damaged "$D/bad3.img" "$DBLK" $((4096 - 64 + 16)) 5858
check "a trailer naming another directory" damaged "$D/bad4.img" "$DBLK" $((4096 - 64 + 48)) 0707

echo "-- fsd killed while creating ($ROUNDS round(s))"
IMG=$D/dxcrash.img
check "mkfs" mkfs_img "$IMG" -M local -b 4096 -C 4096 --fs-feature-level=max-compat \
    --fs-features=$FEATURES
for ((round = 1; round <= ROUNDS; round++)); do
	run_check "round $round: mount (replaying what the last kill left)" fsd_mount "$IMG" \
	    "$MNT" -o commit=1
	mkdir -p "$MNT/c"
	names create "$MNT/c" $((round * 100000)) $((round * 100000 + 20000)) 1 2>/dev/null &
	WL=$!
	# some creates first (a loaded machine is slow to start them), then
	# more than one commit interval, so that a kill finds some committed
	for ((w = 0; w < 200; w++)); do
		(($(ls "$MNT/c" 2>/dev/null | wc -l) >= 100)) && break
		sleep 0.1
	done
	sleep "1.$((RANDOM % 5))"
	kill -9 "$FSD_PID"
	wait "$FSD_PID" 2>/dev/null
	wait "$WL" 2>/dev/null
	umount -l "$MNT" 2>/dev/null
done
run_check "mount after the last kill" fsd_mount "$IMG" "$MNT"
LISTED=$(ls "$MNT/c" | wc -l)
check "some names survived the kills" test "$LISTED" -gt 0
check "every listed name is found through the index" bash -c \
    "ls '$MNT/c' | while read -r n; do [[ -e '$MNT/c/'\$n ]] || exit 1; done"
check "creates go on after the replay" names create "$MNT/c" 0 500 1
run_check "clean unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "dx_root counts what readdir listed" $((LISTED + 500 + 2)) "$(dx_total "$IMG" /c)"
check "the free-space list holds the blocks with room" free_list_ok "$IMG" /c 4096 4096

speed() {
	local label=$1 img=$2 c0 c1 l1
	shift 2
	mkfs_img "$img" -M local -b 4096 -C 4096 --fs-feature-level=max-compat "$@" || return 1
	fsd_mount "$img" "$MNT" || return 1
	mkdir "$MNT/s"
	c0=$(date +%s.%N)
	names create "$MNT/s" 0 "$N" 1 || return 1
	c1=$(date +%s.%N)
	fsd_umount "$MNT" && fsd_mount "$img" "$MNT" || return 1
	l1=$(date +%s.%N)
	names stat "$MNT/s" 0 "$N" 1 || return 1
	printf '   %s: %d creates %.2f s, %d cold lookups %.2f s\n' "$label" "$N" \
	    "$(bc <<<"$c1 - $c0")" "$N" "$(bc <<<"$(date +%s.%N) - $l1")"
	fsd_umount "$MNT"
}
if [[ ${FSD_DXDIR_SPEED:-0} == 1 ]]; then
	echo "-- speed: $N creates and cold lookups, indexed and linear"
	run_check "indexed" speed indexed "$D/speed-dx.img" --fs-features=$FEATURES
	run_check "linear" speed linear "$D/speed-lin.img" --fs-features=sparse,unwritten,inline-data
fi

echo "-- two nodes creating in one shared indexed directory"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
IMG=$D/dxshared.img
check "mkfs (cluster)" mkfs_img "$IMG" --cluster-stack=o2cb --cluster-name=lc -N 2 -b 4096 \
    -C 4096 -J size=8M --fs-feature-level=max-compat --fs-features=$FEATURES
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k"; done
mkdir "${M[1]}/shared"
names create "${M[1]}/shared" 0 1000 2 &
W1=$!
names create "${M[2]}/shared" 1 1000 2 &
W2=$!
run_check "node1 creates its half" wait "$W1"
run_check "node2 creates its half at the same time" wait "$W2"
check "node1 lists all 1000" listing_is "${M[1]}/shared" \
    "set('n%06d-a-name-of-some-length' % i for i in range(1000))"
check "node2 finds node1's names" names stat "${M[2]}/shared" 0 1000 2
check "node1 unlinks node2's names" names unlink "${M[1]}/shared" 1 1000 2
check "node2 lists what is left" listing_is "${M[2]}/shared" \
    "set('n%06d-a-name-of-some-length' % i for i in range(0, 1000, 2))"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"
check_eq "dx_root counts them" 502 "$(dx_total "$IMG" /shared)"

finish
