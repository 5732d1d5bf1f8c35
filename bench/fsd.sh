#!/usr/bin/env bash
# fsd against the FUSE ceiling: the same workloads on fsd (an OCFS2 image,
# preallocated on the same storage) and on fuse-overlayfs (a passthrough
# FUSE filesystem over a directory of that storage), in one run:
# sequential write and read, 4 KiB random read and write, and
# create/stat/unlink of many files in one directory. Prints MB/s or
# ops/s for both and the ratio fsd / passthrough (the floors fsd is held to:
# sequential >= 0.8, metadata >= 0.5). With --runs N every workload runs
# N times on both, in turns, and each figure is the median of the N (the
# ratio: the median of the runs' ratios, which are listed after it).
#   bench/fsd.sh [--size-mb N] [--files N] [--runs N] [--dir DIR]
#   (defaults 1024, 10000, 1, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
SIZE_MB=1024
FILES=10000
RUNS=1
BASE=/tmp
while [[ $# -gt 0 ]]; do
	case $1 in
	--size-mb) SIZE_MB=$2; shift 2 ;;
	--files) FILES=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--dir) BASE=$2; shift 2 ;;
	*) echo "usage: bench/fsd.sh [--size-mb N] [--files N] [--runs N] [--dir DIR]" >&2; exit 2 ;;
	esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "fsd bench: --runs wants a positive count" >&2; exit 2; }
source "$TOP/bench/fsd_lib.inc"	# median
command -v fuse-overlayfs >/dev/null || { echo "fsd bench: fuse-overlayfs missing"; exit 1; }

W=$(mktemp -d "$BASE/fsd-bench.XXXXXX")
FSD_PID=
cleanup() {
	mountpoint -q "$W/fsd" && fusermount3 -u "$W/fsd"
	mountpoint -q "$W/ovl" && fusermount3 -u "$W/ovl"
	[[ -n $FSD_PID ]] && wait "$FSD_PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/fsd" "$W/ovl" "$W/lower" "$W/upper" "$W/work"

# Image: room for the data plus slack, preallocated so that the host
# filesystem's own allocation is not what we measure.
fallocate -l $(((SIZE_MB + 512) * 1024 * 1024)) "$W/v.img"
mkfs.ocfs2 -q -F -M local --fs-feature-level=max-compat -b 4096 -C 4096 "$W/v.img" \
    </dev/null >/dev/null 2>&1 || { echo "fsd bench: mkfs failed"; exit 1; }
"$BUILD/fsd" "$W/v.img" "$W/fsd" >"$W/fsd.log" 2>&1 &
FSD_PID=$!
fuse-overlayfs -o "lowerdir=$W/lower,upperdir=$W/upper,workdir=$W/work" "$W/ovl" || exit 1
for i in $(seq 100); do mountpoint -q "$W/fsd" && break; sleep 0.05; done
mountpoint -q "$W/fsd" || { echo "fsd bench: fsd did not mount"; cat "$W/fsd.log"; exit 1; }

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# Each workload prints seconds taken on mountpoint $1.
seq_write() { local t=$(now); dd if=/dev/zero of="$1/seq" bs=1M count="$SIZE_MB" conv=fsync status=none; secs "$t" "$(now)"; }
seq_read() { drop; local t=$(now); dd if="$1/seq" of=/dev/null bs=1M status=none; secs "$t" "$(now)"; }
# 4 KiB at random offsets inside the sequential file, from one process
# (perl is Essential in Debian), so that we time I/O, not process starts.
RND_OPS=20000
rnd() {
	local mode=$1 mnt=$2 t
	drop
	t=$(now)
	perl -e '
		use Fcntl;
		my ($path, $mode, $ops, $blocks) = @ARGV;
		sysopen(my $fh, $path, $mode eq "read" ? O_RDONLY : O_WRONLY) or die "$path: $!";
		my $buf = "x" x 4096;
		srand(42);
		for (1 .. $ops) {
			my $off = int(rand($blocks)) * 4096;
			sysseek($fh, $off, 0) or die;
			if ($mode eq "read") { sysread($fh, $buf, 4096) == 4096 or die "read: $!"; }
			else { syswrite($fh, $buf, 4096) == 4096 or die "write: $!"; }
		}
		close($fh);' "$mnt/seq" "$mode" "$RND_OPS" "$((SIZE_MB * 256))"
	[[ $mode == write ]] && sync "$mnt/seq"
	secs "$t" "$(now)"
}
creates() { mkdir -p "$1/d"; local t=$(now); (cd "$1/d" && touch $(seq -f 'f%06g' 1 "$FILES")); secs "$t" "$(now)"; }
stats() { drop; local t=$(now); (cd "$1/d" && stat $(seq -f 'f%06g' 1 "$FILES") >/dev/null); secs "$t" "$(now)"; }
unlinks() { local t=$(now); (cd "$1/d" && rm -f $(seq -f 'f%06g' 1 "$FILES")); secs "$t" "$(now)"; }

# measure NAME WORKLOAD...: one run of it on each, seconds kept per name.
measure() {
	local name=$1
	shift
	"$@" "$W/fsd" >>"$W/t.$name.fsd"
	"$@" "$W/ovl" >>"$W/t.$name.ovl"
}
row() {	# row NAME UNIT AMOUNT: medians of the runs of NAME
	local f o ratios
	f=$(median <"$W/t.$1.fsd")
	o=$(median <"$W/t.$1.ovl")
	ratios=$(paste "$W/t.$1.fsd" "$W/t.$1.ovl" | awk '{ printf "%.2f\n", $2 / $1 }')
	awk -v n="$1" -v u="$2" -v a="$3" -v f="$f" -v o="$o" -v r="$(median <<<"$ratios")" \
	    -v all="$(echo $ratios)" -v runs="$RUNS" 'BEGIN {
		printf "  %-22s fsd %10.1f %-5s  passthrough %10.1f %-5s  ratio %.2f",
		    n, a / f, u, a / o, u, r
		if (runs > 1) printf "  (%s)", all
		printf "\n" }'
}

for i in $(seq "$RUNS"); do
	measure "sequential write" seq_write
	measure "sequential read" seq_read
	measure "4K random read" rnd read
	measure "4K random write" rnd write
	measure create creates
	measure stat stats
	measure unlink unlinks
done
runs=
[[ $RUNS -gt 1 ]] && runs=", medians of $RUNS runs"
echo "fsd vs fuse-overlayfs on $(df --output=fstype "$W" | tail -n 1) ($SIZE_MB MiB file, $FILES files$runs)"
row "sequential write" MB/s "$SIZE_MB"
row "sequential read" MB/s "$SIZE_MB"
row "4K random read" ops/s "$RND_OPS"
row "4K random write" ops/s "$RND_OPS"
row create ops/s "$FILES"
row stat ops/s "$FILES"
row unlink ops/s "$FILES"
