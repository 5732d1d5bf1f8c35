#!/usr/bin/env bash
# fsd on a volume with the allocation features (sparse, unwritten,
# inline-data, discontig-bg, append-dio) against fsd on a max-compat
# volume and fuse-overlayfs, in one run on the same storage: sequential
# write and read, sequential O_DIRECT appends, 4 KiB random read and
# write, a 1 GiB fallocate then a punch of every other MiB, and creating
# many 100-byte files (inline on the feature volume). Each figure is the
# median of RUNS runs; the ratios are features / max-compat (held to at
# least 0.9: the features may not cost more than 10%) and features /
# passthrough.
#   bench/fsd_features.sh [--size-mb N] [--files N] [--runs N] [--dir DIR]
#   (defaults 512, 10000, 3, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
SIZE_MB=512
FILES=10000
RUNS=3
DIR=/tmp
source "$TOP/bench/options.inc"
bench_options "bench/fsd_features.sh [--size-mb N] [--files N] [--runs N] [--dir DIR]" size-mb files runs dir -- "$@"
command -v fuse-overlayfs >/dev/null || { echo "fsd_features bench: fuse-overlayfs missing"; exit 1; }

W=$(mktemp -d "$DIR/fsd-features-bench.XXXXXX")
PIDS=()
cleanup() {
	local m p
	for m in mc ft ovl; do mountpoint -q "$W/$m" && fusermount3 -u "$W/$m"; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/mc" "$W/ft" "$W/ovl" "$W/lower" "$W/upper" "$W/work"

# mount_fsd NAME FEATURES: an image preallocated on the same storage (its
# host allocation is not what we measure), made and mounted on $W/NAME.
mount_fsd() {
	local name=$1 i
	shift
	fallocate -l $(((2 * SIZE_MB + 2048) * 1024 * 1024)) "$W/$name.img"
	mkfs.ocfs2 -q -F -M local --fs-feature-level=max-compat -b 4096 -C 4096 "$@" \
	    "$W/$name.img" </dev/null >/dev/null 2>&1 || { echo "mkfs $name failed"; return 1; }
	"$BUILD/fsd" "$W/$name.img" "$W/$name" >"$W/$name.log" 2>&1 &
	PIDS+=($!)
	for i in $(seq 100); do mountpoint -q "$W/$name" && return 0; sleep 0.05; done
	echo "fsd did not mount $name"
	cat "$W/$name.log"
	return 1
}
mount_fsd mc || exit 1
mount_fsd ft --fs-features=sparse,unwritten,inline-data,discontig-bg,append-dio || exit 1
fuse-overlayfs -o "lowerdir=$W/lower,upperdir=$W/upper,workdir=$W/work" "$W/ovl" || exit 1

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# Each workload prints the seconds it took on mountpoint $1.
seq_write() {
	rm -f "$1/seq"
	sync
	local t=$(now)
	dd if=/dev/zero of="$1/seq" bs=1M count="$SIZE_MB" conv=fsync status=none
	secs "$t" "$(now)"
}
seq_read() { drop; local t=$(now); dd if="$1/seq" of=/dev/null bs=1M status=none; secs "$t" "$(now)"; }
# O_DIRECT appends of 1 MiB (the append-dio path on the feature volume).
dio_append() {
	rm -f "$1/dio"
	sync
	local t=$(now)
	dd if=/dev/zero of="$1/dio" bs=1M count="$SIZE_MB" oflag=direct conv=fsync status=none
	secs "$t" "$(now)"
}
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
rnd_read() { rnd read "$1"; }
rnd_write() { rnd write "$1"; }
# fallocate 1 GiB, then punch every other MiB of it, fsync'ed.
falloc_punch() {
	rm -f "$1/fa"
	sync
	local t=$(now)
	python3 - "$1/fa" <<'EOF' || return 1
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
MIB = 1 << 20
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
if libc.fallocate(fd, 0, 0, 1024 * MIB) != 0:
    sys.exit("fallocate: " + os.strerror(ctypes.get_errno()))
for k in range(0, 1024, 2):
    # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    if libc.fallocate(fd, 3, k * MIB, MIB) != 0:
        sys.exit("punch: " + os.strerror(ctypes.get_errno()))
os.fsync(fd)
os.close(fd)
EOF
	secs "$t" "$(now)"
}
# FILES files of 100 bytes in one directory, from one process, then syncfs.
small_files() {
	rm -rf "$1/small"
	mkdir "$1/small"
	sync
	local t=$(now)
	python3 - "$1/small" "$FILES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
data = b"x" * 100
for i in range(n):
    fd = os.open("%s/f%06d" % (d, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, data)
    os.close(fd)
fd = os.open(d, os.O_RDONLY)
os.syncfs(fd) if hasattr(os, "syncfs") else os.sync()
os.close(fd)
EOF
	secs "$t" "$(now)"
}

# median: the median of the numbers on stdin.
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# row NAME UNIT AMOUNT FN [skip-mc]: the three filesystems, in units per
# second. The runs alternate between them, so that a load from elsewhere
# on the machine falls on all three alike.
row() {
	local name=$1 unit=$2 amount=$3 fn=$4 i mc=- ft ovl
	: >"$W/t.mc"
	: >"$W/t.ft"
	: >"$W/t.ovl"
	for i in $(seq "$RUNS"); do
		[[ ${5:-} == skip-mc ]] || "$fn" "$W/mc" >>"$W/t.mc"
		"$fn" "$W/ft" >>"$W/t.ft"
		"$fn" "$W/ovl" >>"$W/t.ovl"
	done
	[[ ${5:-} == skip-mc ]] || mc=$(median <"$W/t.mc")
	ft=$(median <"$W/t.ft")
	ovl=$(median <"$W/t.ovl")
	awk -v n="$name" -v u="$unit" -v a="$amount" -v m="$mc" -v f="$ft" -v o="$ovl" 'BEGIN {
		if (m == "-") { ms = "       n/a"; r = "  n/a" } else { ms = sprintf("%10.1f", a / m); r = sprintf("%5.2f", m / f) }
		printf "  %-24s max-compat %s  features %10.1f  passthrough %10.1f %-6s  features/max-compat %s  features/passthrough %.2f\n",
		    n, ms, a / f, a / o, u, r, o / f }'
}

echo "fsd max-compat vs fsd with the allocation features vs fuse-overlayfs on" \
    "$(df --output=fstype "$W" | tail -n 1) ($SIZE_MB MiB, $FILES files, median of $RUNS)"
row "sequential write" MB/s "$SIZE_MB" seq_write
row "sequential read" MB/s "$SIZE_MB" seq_read
row "4K random read" ops/s "$RND_OPS" rnd_read
row "4K random write" ops/s "$RND_OPS" rnd_write
row "O_DIRECT 1M appends" MB/s "$SIZE_MB" dio_append
row "fallocate 1G + punch" runs/s 1 falloc_punch skip-mc
row "100-byte file creates" files/s "$FILES" small_files
