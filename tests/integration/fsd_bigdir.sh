#!/usr/bin/env bash
# A big indexed directory worked on by three nodes at once
# (doc/indexed-dirs.md). Names of 9 to 25 bytes, so that full blocks keep
# holes of every size on the free-space list.
#
# node1 fills the directory with N names alone (FSD_BIGDIR_N, 2000 by
# default; make soak: 1,000,000), then the three nodes at once create
# BUSY more (FSD_BIGDIR_BUSY, 600 by default), each its third, while
# looking up names the others made. Then at once (CHURN names each,
# FSD_BIGDIR_CHURN, 260 by default): node1 unlinks names at random and
# looks up others, node2 renames names out of the directory
# and files from another one into it, node3 creates names and lists the
# directory over and over: no listing may return a name twice or miss
# one that existed throughout. At the end each node lists exactly the
# names that must be there and finds each; fsck.ocfs2 -fn is clean,
# debugfs.ocfs2 `ls` lists what readdir listed, and the index root
# counts them.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

N=${FSD_BIGDIR_N:-2000}
BUSY=${FSD_BIGDIR_BUSY:-600}
CHURN=${FSD_BIGDIR_CHURN:-260}
# churned names are every STRIDE-th: i % STRIDE == 1 unlinked, == 2 renamed out
STRIDE=$(((N + BUSY) / CHURN))
((STRIDE >= 10)) || { echo "FSD_BIGDIR_CHURN: at most a tenth of the names"; exit 2; }
FEATURES=indexed-dirs,sparse,unwritten,inline-data
IMG=$FSD_DIR/big.img
# The image grows with N: an inode block and some directory and index room a name.
SIZE_MB=$((256 + (N + BUSY) * 6 / 1024))

# names OP DIR FIRST LAST STEP: create/stat/unlink names FIRST.. (every STEP-th) in DIR.
names() {
	python3 - "$@" <<'EOF'
import os, sys
op, d, first, last, step = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
for i in range(first, last, step):
    p = "%s/b%07d%s" % (d, i, "-" * (i % 17))
    if op == "create":
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    elif op == "stat":
        os.stat(p)
    elif op == "unlink":
        os.unlink(p)
EOF
}

# The names the churn below touches, by index i of b%07d: unlinked at
# random (i % STRIDE == 1), renamed out (i % STRIDE == 2); the rest stay.
# churn OP DIR [OTHER DIR] [DONE FILE]: one node's part.
churn() {
	python3 - "$N" "$BUSY" "$STRIDE" "$@" <<'EOF'
import os, random, sys, time
n, busy, stride = map(int, sys.argv[1:4])
op, d = sys.argv[4], sys.argv[5]
total = n + busy
name = lambda i: "b%07d%s" % (i, "-" * (i % 17))
rnd = random.Random(7)
if op == "unlink":
    # random unlinks, each followed by a lookup of a name that stays
    gone = list(range(1, total, stride))
    rnd.shuffle(gone)
    for i in gone:
        os.unlink(os.path.join(d, name(i)))
        os.stat(os.path.join(d, name(rnd.randrange(0, total, stride))))
elif op == "rename":
    # names out to OTHER, files of OTHER in
    other = sys.argv[6]
    for i in range(2, total, stride):
        os.rename(os.path.join(d, name(i)), os.path.join(other, "out%07d" % i))
        os.rename(os.path.join(other, "in%07d" % i), os.path.join(d, "in%07d" % i))
elif op == "list":
    # list until DONE exists, at least twice; each listing whole
    done, stays, passes = sys.argv[6], set(), 0
    for i in range(total):
        if i % stride not in (1, 2):
            stays.add(name(i))
    k = 0
    while passes < 2 or not os.path.exists(done):
        seen = []
        for e in os.scandir(d):
            seen.append(e.name)
            if len(seen) % 200 == 0 and k < busy:
                # a create between getdents calls
                os.close(os.open(os.path.join(d, "late%07d" % k), os.O_CREAT | os.O_WRONLY, 0o644))
                k += 1
        dup = len(seen) - len(set(seen))
        missing = stays - set(seen)
        if dup or missing:
            sys.exit("listing %d: %d names twice, %d that stayed missing (%s)" % (passes, dup,
                len(missing), sorted(missing)[:3]))
        passes += 1
    print(passes, k)
EOF
}

# final_names: what must be left in the directory after the churn (one a line).
final_names() {
	python3 - "$N" "$BUSY" "$STRIDE" "$1" <<'EOF'
import sys
n, busy, stride, late = map(int, sys.argv[1:5])
total = n + busy
for i in range(total):
    if i % stride not in (1, 2):
        print("b%07d%s" % (i, "-" * (i % 17)))
for i in range(2, total, stride):
    print("in%07d" % i)
for k in range(late):
    print("late%07d" % k)
EOF
}

# listing_is DIR FILE: readdir of DIR gives each name of FILE once, and no other.
listing_is() {
	python3 - "$1" "$2" <<'EOF'
import os, sys
got = os.listdir(sys.argv[1])
want = set(open(sys.argv[2]).read().split())
if len(got) != len(set(got)) or set(got) != want:
    print("listed %d (%d distinct), expected %d; missing %s, extra %s" % (len(got),
        len(set(got)), len(want), sorted(want - set(got))[:5], sorted(set(got) - want)[:5]))
    sys.exit(1)
EOF
}

# all_found DIR FILE: a lookup of each name of FILE in DIR succeeds.
all_found() {
	python3 - "$1" "$2" <<'EOF'
import os, sys
for n in open(sys.argv[2]).read().split():
    os.stat(os.path.join(sys.argv[1], n))
EOF
}

# debugfs_names IMG PATH: the names debugfs.ocfs2 ls lists, "." and ".." left out, sorted.
debugfs_names() {
	debugfs.ocfs2 -R "ls $2" "$1" 2>/dev/null | awk '{ print $NF }' | grep -vx '\.\|\.\.' | sort
}

echo "-- $N names by node1, $BUSY by three nodes at once, then churn"
lc_setup
trap 'cluster_cleanup 3 fsd' EXIT
check "mkfs (cluster)" mkfs_img_size "$IMG" "${SIZE_MB}M" --cluster-stack=o2cb --cluster-name=lc \
    -N 3 -b 4096 -C 4096 -J size=16M --fs-feature-level=max-compat --fs-features=$FEATURES
if ! lc up 3 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 3"
	finish
	exit 1
fi
declare -a M=() PID=()
for k in 1 2 3; do run_check "node$k mounts" node_mount "$k"; done
mkdir "${M[1]}/big" "${M[1]}/side"
check "node1 creates $N names alone" names create "${M[1]}/big" 0 "$N" 1
check "files to rename in" python3 -c "
import os, sys
for i in range(2, $N + $BUSY, $STRIDE):
    os.close(os.open('${M[1]}/side/in%07d' % i, os.O_CREAT | os.O_WRONLY, 0o644))"

for k in 1 2 3; do
	names create "${M[$k]}/big" $((N + k - 1)) $((N + BUSY)) 3 &
	PID[$k]=$!
done
# lookups meanwhile of what node1 made alone, from the other nodes
check "node2 looks up node1's names meanwhile" names stat "${M[2]}/big" 0 "$N" 7
for k in 1 2 3; do run_check "node$k creates its third at the same time" wait "${PID[$k]}"; done
check "node3 finds every name" names stat "${M[3]}/big" 0 $((N + BUSY)) 1

DONE=$FSD_DIR/churn-done
churn list "${M[3]}/big" "$DONE" >"$FSD_DIR/list.out" 2>&1 &
LISTER=$!
churn unlink "${M[1]}/big" >"$FSD_DIR/unlink.out" 2>&1 &
U=$!
churn rename "${M[2]}/big" "${M[2]}/side" >"$FSD_DIR/rename.out" 2>&1 &
R=$!
run_check "node1 unlinks at random, looking up others" wait "$U"
run_check "node2 renames out and in" wait "$R"
touch "$DONE"
if wait "$LISTER"; then
	pass "node3's listings during the churn: every name that stayed, once ($(awk '{ print $1 " listings, " $2 " creates" }' "$FSD_DIR/list.out"))"
else
	fail "node3's listings during the churn"
	sed 's/^/       | /' "$FSD_DIR/list.out" "$FSD_DIR/unlink.out" "$FSD_DIR/rename.out" | tail -n 20
fi
LATE=$(awk '{ print $2 }' "$FSD_DIR/list.out")
final_names "${LATE:-0}" | sort >"$FSD_DIR/final"

for k in 1 2 3; do check "node$k lists exactly what is left" listing_is "${M[$k]}/big" "$FSD_DIR/final"; done
check "node1 finds every name left" all_found "${M[1]}/big" "$FSD_DIR/final"
check "renamed names are in the other directory" python3 -c "
import os
want = {'out%07d' % i for i in range(2, $N + $BUSY, $STRIDE)}
got = set(os.listdir('${M[3]}/side'))
assert got == want, (len(got), len(want))"
for k in 1 2 3; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"
check "debugfs.ocfs2 ls lists what readdir listed" cmp -s "$FSD_DIR/final" \
    <(debugfs_names "$IMG" /big)
check_eq "the index root counts them and . and .." $(($(wc -l <"$FSD_DIR/final") + 2)) \
    "$(debugfs.ocfs2 -R "dx_dump /big" "$IMG" 2>/dev/null | sed -n 's/.*Total Entry Count: \([0-9]*\).*/\1/p')"

finish
