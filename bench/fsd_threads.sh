#!/usr/bin/env bash
# Metadata work from many threads of one node: THREADS threads each
# creating (then unlinking) FILES/THREADS files in a directory of its own,
# against one thread doing all FILES, on fsd (a local volume) and on
# fuse-overlayfs over the same storage, in one run. The figure is the
# speedup of THREADS threads over one (same total work), medians of RUNS
# runs; the passthrough's speedup shows what this machine's CPUs allow a
# FUSE filesystem. The floor: fsd's creates at least 1.5x with 8 threads.
#   bench/fsd_threads.sh [--threads N] [--files N] [--runs N] [--dir DIR]
#   (defaults 8, 8000, 5, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
THREADS=8
FILES=8000
RUNS=5
DIR=/tmp
source "$TOP/bench/options.inc"
bench_options "bench/fsd_threads.sh [--threads N] [--files N] [--runs N] [--dir DIR]" threads files runs dir -- "$@"
command -v fuse-overlayfs >/dev/null || { echo "fsd_threads bench: fuse-overlayfs missing"; exit 1; }

W=$(mktemp -d "$DIR/fsd-threads-bench.XXXXXX")
source "$TOP/bench/fsd_lib.inc"

mkfs_vol fsd 2G "" || exit 1
mount_vol fsd || exit 1
mount_ovl || exit 1

# work MNT TAG NTHREADS: seconds of the creates and of the unlinks, one line.
work() {
	python3 - "$@" "$FILES" <<'EOF'
import os, sys, threading, time
mnt, tag, nthreads, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
dirs = []
for t in range(nthreads):
    d = os.path.join(mnt, "%s-%d" % (tag, t))
    os.mkdir(d)
    dirs.append(d)
per = files // nthreads
def creates(d):
    for i in range(per):
        os.close(os.open(os.path.join(d, "f%06d" % i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
def unlinks(d):
    for i in range(per):
        os.unlink(os.path.join(d, "f%06d" % i))
def timed(fn):
    ts = [threading.Thread(target=fn, args=(d,)) for d in dirs]
    t0 = time.monotonic()
    for t in ts: t.start()
    for t in ts: t.join()
    return time.monotonic() - t0
c = timed(creates)
u = timed(unlinks)
for d in dirs:
    os.rmdir(d)
print("%.6f %.6f" % (c, u))
EOF
}

declare -A SECS=()
for r in $(seq "$RUNS"); do
	for m in fsd ovl; do
		for t in 1 "$THREADS"; do
			SECS[$m,$t]+="$(work "$W/$m" "r$r-t$t" "$t")"$'\n'
		done
	done
done
# speedup M COLUMN: one thread's median seconds over THREADS threads'.
speedup() {
	local one many
	one=$(awk -v c="$2" 'NF { print $c }' <<<"${SECS[$1,1]}" | median)
	many=$(awk -v c="$2" 'NF { print $c }' <<<"${SECS[$1,$THREADS]}" | median)
	awk -v a="$one" -v b="$many" -v f="$FILES" 'BEGIN {
		printf "%8.0f/s with 1 thread, %8.0f/s with '"$THREADS"': %.2fx", f / a, f / b, a / b }'
}
echo "$THREADS threads against 1, own directories, $FILES files in all, medians of $RUNS runs ($(nproc) CPUs)"
for col in 1 2; do
	op=creates
	[[ $col == 2 ]] && op=unlinks
	printf "  %-8s fsd %s\n" "$op" "$(speedup fsd "$col")"
	printf "  %-8s passthrough %s\n" "" "$(speedup ovl "$col")"
done
