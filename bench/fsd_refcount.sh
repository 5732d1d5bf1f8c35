#!/usr/bin/env bash
# Shared extents on fsd (doc/refcount.md), on one default-level volume in
# one run: o2ctl reflink of a SIZE file against copying it (dd, 1 MiB
# blocks, fsync'ed: what a copy costs on the same volume), then 4 KiB
# random writes, fsync'ed at the end, into a freshly reflinked file
# (each first write into a cluster copies it) against the same writes
# into a file of its own. Each figure is the median of RUNS runs; the
# ratios are copy / reflink and own / reflinked (rates).
#   bench/fsd_refcount.sh [--size-mb N] [--writes N] [--runs N] [--dir DIR]
#   (defaults 1024, 5000, 3, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
SIZE_MB=1024
WRITES=5000
RUNS=3
DIR=/tmp
source "$TOP/bench/options.inc"
bench_options "bench/fsd_refcount.sh [--size-mb N] [--writes N] [--runs N] [--dir DIR]" size-mb writes runs dir -- "$@"

W=$(mktemp -d "$DIR/fsd-refcount-bench.XXXXXX")
FSD_PID=
cleanup() {
	mountpoint -q "$W/m" && fusermount3 -u "$W/m"
	[[ -n $FSD_PID ]] && wait "$FSD_PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/m"
# the source, a copy and a reflink at a time, and room for the writes
fallocate -l $(((3 * SIZE_MB + 1024) * 1024 * 1024)) "$W/v.img"
mkfs.ocfs2 -q -F -M local -b 4096 -C 4096 "$W/v.img" </dev/null >/dev/null 2>&1 ||
    { echo "mkfs failed"; exit 1; }
"$BUILD/fsd" "$W/v.img" "$W/m" >"$W/fsd.log" 2>&1 &
FSD_PID=$!
for i in $(seq 100); do mountpoint -q "$W/m" && break; sleep 0.05; done
mountpoint -q "$W/m" || { echo "fsd did not mount"; cat "$W/fsd.log"; exit 1; }

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

dd if=/dev/urandom of="$W/m/src" bs=1M count="$SIZE_MB" conv=fsync status=none
reflink() {
	rm -f "$W/m/dst"
	sync
	local t=$(now)
	"$BUILD/o2ctl" reflink "$W/m/src" "$W/m/dst" || return 1
	secs "$t" "$(now)"
}
copy() {
	rm -f "$W/m/dst"
	sync
	local t=$(now)
	dd if="$W/m/src" of="$W/m/dst" bs=1M conv=fsync status=none || return 1
	secs "$t" "$(now)"
}
# rnd_write FILE: WRITES 4 KiB writes at random 4 KiB offsets, then fsync.
rnd_write() {
	local t=$(now)
	perl -e '
		use Fcntl; use IO::Handle;
		my ($path, $ops, $blocks) = @ARGV;
		sysopen(my $fh, $path, O_WRONLY) or die "$path: $!";
		my $buf = "y" x 4096;
		srand(7);
		for (1 .. $ops) {
			sysseek($fh, int(rand($blocks)) * 4096, 0) or die;
			syswrite($fh, $buf, 4096) == 4096 or die "write: $!";
		}
		$fh->sync or die "fsync: $!";' "$1" "$WRITES" "$((SIZE_MB * 256))" || return 1
	secs "$t" "$(now)"
}
reflinked_writes() { reflink >/dev/null && rnd_write "$W/m/dst"; }
own_writes() { copy >/dev/null && rnd_write "$W/m/dst"; }

: >"$W/t.reflink"; : >"$W/t.copy"; : >"$W/t.rw"; : >"$W/t.ow"
for i in $(seq "$RUNS"); do
	reflink >>"$W/t.reflink" || exit 1
	copy >>"$W/t.copy" || exit 1
	reflinked_writes >>"$W/t.rw" || exit 1
	own_writes >>"$W/t.ow" || exit 1
done
rl=$(median <"$W/t.reflink")
cp_=$(median <"$W/t.copy")
rw=$(median <"$W/t.rw")
ow=$(median <"$W/t.ow")
echo "fsd shared extents on $(df --output=fstype "$W" | tail -n 1) ($SIZE_MB MiB, $WRITES writes, median of $RUNS)"
awk -v s="$SIZE_MB" -v rl="$rl" -v c="$cp_" 'BEGIN {
	printf "  %-34s reflink %9.3f ms  copy %9.1f ms  copy/reflink %8.1f\n", "whole file", rl * 1000, c * 1000, c / rl }'
awk -v n="$WRITES" -v rw="$rw" -v ow="$ow" 'BEGIN {
	printf "  %-34s reflinked %8.0f ops/s  own %8.0f ops/s  reflinked/own %5.2f\n", "4K random writes + fsync", n / rw, n / ow, ow / rw }'
