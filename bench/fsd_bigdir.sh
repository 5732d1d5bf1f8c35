#!/usr/bin/env bash
# Lookups in a huge indexed directory: fsd (indexed-dirs, inline-data,
# sparse, unwritten; an image preallocated on the same storage) with
# NAMES names in one directory, against the same number of names in
# directories of 1,000 on the same volume, and against fuse-overlayfs (a
# passthrough FUSE filesystem) over a directory of NAMES names of that
# storage, in one run. Each lookup run stats LOOKUPS random names, each
# once, after the kernel's dentries and inodes are dropped, so that every
# one reaches the filesystem; then CHURN creates and as many unlinks in
# the big directory. Figures are medians of RUNS runs, the order of the
# lookup workloads alternating between runs (creates and unlinks after all
# of them), with fsd's CPU time and blocks read from the volume a lookup
# beside them. The floors: lookups in the big directory at
# least 0.8 of the passthrough's and 0.9 of those in the small directories
# (the index makes a lookup O(1) in the directory's size). Also the
# create rate while filling: the first tenth against the last.
#   bench/fsd_bigdir.sh [--names N] [--lookups N] [--churn N] [--runs N] [--dir DIR]
#   (defaults 1000000, 20000, 10000, 3, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
NAMES=1000000
LOOKUPS=20000
CHURN=10000
RUNS=3
DIR=/tmp
source "$TOP/bench/options.inc"
bench_options "bench/fsd_bigdir.sh [--names N] [--lookups N] [--churn N] [--runs N] [--dir DIR]" names lookups churn runs dir -- "$@"
command -v fuse-overlayfs >/dev/null || { echo "fsd_bigdir bench: fuse-overlayfs missing"; exit 1; }
((LOOKUPS <= NAMES)) || { echo "fsd_bigdir bench: more lookups than names"; exit 2; }
SMALL=$(((NAMES + 999) / 1000))		# directories of 1,000 names

W=$(mktemp -d "$DIR/fsd-bigdir-bench.XXXXXX")
source "$TOP/bench/fsd_lib.inc"

# work OP ARGS...: the timed workloads, each printing seconds (fill: a
# line of creates/s per tenth).
work() {
	python3 - "$@" <<'EOF'
import os, random, subprocess, sys, time
op = sys.argv[1]
name = lambda i: "b%07d%s" % (i, "-" * (i % 17))
def creates(paths):
    for p in paths:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
if op == "fill":		# fill DIR N: N names in DIR
    d, n = sys.argv[2], int(sys.argv[3])
    step = max(n // 10, 1)
    for first in range(0, n, step):
        t = time.time()
        creates("%s/%s" % (d, name(i)) for i in range(first, min(first + step, n)))
        print("%.1f" % ((min(first + step, n) - first) / (time.time() - t)))
elif op == "fill_both":	# fill_both BIG SMALL N: N names in BIG and in SMALL/sNNNN, 1,000 each
    # in turns of 1,000, so that neither set of inodes is the more recently
    # written (the storage under the image caches what it wrote last);
    # prints BIG's creates/s per tenth
    big, small, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    tenth = max(n // 10, 1)
    count, spent = 0, 0.0
    for k in range((n + 999) // 1000):
        names = range(k * 1000, min(k * 1000 + 1000, n))
        t = time.time()
        creates("%s/%s" % (big, name(i)) for i in names)
        spent += time.time() - t
        count += len(names)
        if count >= tenth or names[-1] == n - 1:
            print("%.1f" % (count / spent))
            count, spent = 0, 0.0
        os.mkdir("%s/s%04d" % (small, k))
        creates("%s/s%04d/%s" % (small, k, name(i)) for i in names)
elif op == "stat":		# stat DIR N LOOKUPS SEED small|big
    d, n, count, seed, where = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    pick = random.Random(seed).sample(range(n), count)
    if where == "big":
        paths = ["%s/%s" % (d, name(i)) for i in pick]
    else:
        paths = ["%s/s%04d/%s" % (d, i // 1000, name(i)) for i in pick]
    t = time.time()
    for p in paths:
        os.stat(p)
    print("%.6f" % (time.time() - t))
elif op in ("create", "unlink"):	# create|unlink DIR N RUN
    d, n, run = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    paths = ["%s/c%s-%07d" % (d, run, i) for i in range(n)]
    t = time.time()
    if op == "create":
        creates(paths)
    else:
        for p in paths:
            os.unlink(p)
    subprocess.run(["sync", "-f", d], check=True)
    print("%.6f" % (time.time() - t))
EOF
}
# The kernel forgets its dentries and inodes: the next lookups reach the filesystems.
drop() { sync; echo 2 >/proc/sys/vm/drop_caches; }

# fsd: NAMES inodes twice over and the directories' blocks, with room to spare
mkfs_vol v $(((NAMES * 2 * 4400 / 1048576 + 1024) * 1048576)) \
    sparse,unwritten,inline-data,indexed-dirs || exit 1
mount_vol v || exit 1
mkdir -p "$W/v/big" "$W/v/small" "$W/lower/big"
work fill_both "$W/v/big" "$W/v/small" "$NAMES" >"$W/fill" || exit 1
# the passthrough's names straight into its lower directory
work fill "$W/lower/big" "$NAMES" >/dev/null || exit 1
mount_ovl || exit 1
sync -f "$W/v"

declare -A T=()
# fsd's CPU time (ticks) over the lookups in each directory, steadier than
# the rates on a loaded machine
declare -A CPU=([big]=0 [small]=0)
fsd_ticks() {
	local f
	read -ra f <"/proc/${PID[v]}/stat"
	echo $((f[13] + f[14]))		# utime, stime ("fsd" has no spaces)
}
# and the bytes it read from the volume (every one a block cache miss)
declare -A READ=([big]=0 [small]=0)
fsd_read_bytes() { awk '/^read_bytes/ { print $2 }' "/proc/${PID[v]}/io"; }
for r in $(seq "$RUNS"); do
	order="big small ovl"
	((r % 2 == 0)) && order="small big ovl"
	for w in $order; do
		drop
		t0=$(fsd_ticks)
		r0=$(fsd_read_bytes)
		case $w in
		big) T[stat.big]+="$(work stat "$W/v/big" "$NAMES" "$LOOKUPS" "$r" big) " ;;
		small) T[stat.small]+="$(work stat "$W/v/small" "$NAMES" "$LOOKUPS" "$r" small) " ;;
		ovl) T[stat.ovl]+="$(work stat "$W/ovl/big" "$NAMES" "$LOOKUPS" "$r" big) " ;;
		esac
		[[ $w == ovl ]] || CPU[$w]=$((CPU[$w] + $(fsd_ticks) - t0)) READ[$w]=$((READ[$w] + $(fsd_read_bytes) - r0))
	done
done
# after the lookups: fsd deletes unlinked inodes in the background
for r in $(seq "$RUNS"); do
	for m in v ovl; do
		T[create.$m]+="$(work create "$W/$m/big" "$CHURN" "$r") "
		T[unlink.$m]+="$(work unlink "$W/$m/big" "$CHURN" "$r") "
	done
done

med() { tr ' ' '\n' <<<"${T[$1]}" | grep . | median; }
echo "fsd: $NAMES names in one indexed directory on $(df --output=fstype "$W" | tail -n 1)" \
    "($LOOKUPS random lookups, $CHURN creates and unlinks; median of $RUNS)"
awk -v f="$(head -n 1 "$W/fill")" -v l="$(tail -n 1 "$W/fill")" 'BEGIN {
	printf "  filling: creates %9.1f /s in the first tenth, %9.1f /s in the last  last/first %.2f\n", f, l, l / f }'
rc=0
awk -v n="$LOOKUPS" -v b="$(med stat.big)" -v s="$(med stat.small)" -v o="$(med stat.ovl)" 'BEGIN {
	printf "  lookup+stat: big %9.1f /s  1,000-name dirs %9.1f /s  passthrough %9.1f /s\n", n / b, n / s, n / o
	printf "               big/passthrough %.2f (floor 0.8)  big/1,000-name dirs %.2f (floor 0.9)\n", o / b, s / b
	exit (o / b < 0.8 || s / b < 0.9) }' || rc=1
awk -v b="${CPU[big]}" -v s="${CPU[small]}" -v hz="$(getconf CLK_TCK)" -v n=$((LOOKUPS * RUNS)) 'BEGIN {
	printf "  fsd CPU a lookup: big %.1f us  1,000-name dirs %.1f us  big/1,000-name dirs %.2f\n",
	    b / hz / n * 1e6, s / hz / n * 1e6, (s > 0 ? b / s : 0) }'
awk -v b="${READ[big]}" -v s="${READ[small]}" -v n=$((LOOKUPS * RUNS)) 'BEGIN {
	printf "  fsd blocks read a lookup (4 KiB): big %.2f  1,000-name dirs %.2f\n", b / 4096 / n, s / 4096 / n }'
awk '/^VmHWM/ { printf "  fsd memory: peak resident %.1f MiB\n", $2 / 1024 }' "/proc/${PID[v]}/status"
for w in create unlink; do
	awk -v w="$w" -v n="$CHURN" -v f="$(med "$w.v")" -v o="$(med "$w.ovl")" 'BEGIN {
		printf "  %-6s in the big directory: fsd %9.1f /s  passthrough %9.1f /s  ratio %.2f\n", w, n / f, n / o, o / f }'
done
exit $rc
