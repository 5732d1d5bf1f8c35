#!/usr/bin/env bash
# The cost of metaecc on metadata operations: fsd on two volumes with the
# same features (sparse, unwritten, inline-data, xattr, indexed-dirs,
# discontig-bg, append-dio), one with metaecc, in one run on the same
# storage: creating FILES empty files in one directory (syncfs), a stat
# of each after a remount (every inode block read and verified), a
# listing, then unlinking them all (sync -f). Each figure is the median of
# RUNS runs, the runs alternating between the two volumes; the ratio is
# metaecc / plain throughput (the floor is 0.9: at most 10% slower), and
# the CPU time each fsd spent over all the runs.
#   bench/fsd_metaecc.sh [--files N] [--runs N] [--dir DIR]
#   (defaults 5000, 3, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
FILES=5000
RUNS=3
DIR=/tmp
source "$TOP/bench/options.inc"
bench_options "bench/fsd_metaecc.sh [--files N] [--runs N] [--dir DIR]" files runs dir -- "$@"
FEATURES=sparse,unwritten,inline-data,xattr,indexed-dirs,discontig-bg,append-dio

W=$(mktemp -d "$DIR/fsd-metaecc-bench.XXXXXX")
source "$TOP/bench/fsd_lib.inc"
mkfs_vol plain 1G "$FEATURES" || exit 1
mkfs_vol ecc 1G "metaecc,$FEATURES" || exit 1
for v in plain ecc; do mount_vol "$v" || exit 1; done

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }

# Each workload prints the seconds it took on volume $1.
creates() {
	rm -rf "$W/$1/d"
	mkdir "$W/$1/d"
	sync
	local t=$(now)
	python3 - "$W/$1/d" "$FILES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.close(os.open("%s/f%06d" % (d, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
EOF
	sync -f "$W/$1/d"
	secs "$t" "$(now)"
}
# After a remount (outside the timed subshell): fsd's cache is cold,
# each inode comes from the disk.
remount() { cpu_add "$1" && umount_vol "$1" && mount_vol "$1"; }
# The CPU time (ticks) fsd spent on each volume, less exposed to the
# machine's other load than the wall-clock rates.
declare -A CPU=([plain]=0 [ecc]=0)
cpu_add() {
	local f
	read -ra f <"/proc/${PID[$1]}/stat" || return 1
	# utime and stime: fields 14 and 15 (comm "fsd" has no spaces)
	CPU[$1]=$((CPU[$1] + f[13] + f[14]))
}
stats() {
	local t=$(now)
	python3 - "$W/$1/d" "$FILES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
names = os.listdir(d)
assert len(names) == n, len(names)
for f in names:
    os.stat(os.path.join(d, f))
EOF
	secs "$t" "$(now)"
}
unlinks() {
	local t=$(now)
	python3 - "$W/$1/d" <<'EOF'
import os, sys
d = sys.argv[1]
for f in os.listdir(d):
    os.unlink(os.path.join(d, f))
EOF
	sync -f "$W/$1/d"
	secs "$t" "$(now)"
}

# The three workloads RUNS times, alternating volumes; one row each.
declare -A T=()
for i in $(seq "$RUNS"); do
	# which volume goes first alternates too
	order="plain ecc"
	((i % 2 == 0)) && order="ecc plain"
	for v in $order; do
		T[creates.$v]+="$(creates "$v") "
		remount "$v" || exit 1
		T[stats.$v]+="$(stats "$v") "
		T[unlinks.$v]+="$(unlinks "$v") "
	done
done
for v in plain ecc; do cpu_add "$v"; done
echo "fsd: $FEATURES without and with metaecc on" \
    "$(df --output=fstype "$W" | tail -n 1) ($FILES files, median of $RUNS)"
rc=0
for w in creates stats unlinks; do
	p=$(tr ' ' '\n' <<<"${T[$w.plain]}" | grep . | median)
	e=$(tr ' ' '\n' <<<"${T[$w.ecc]}" | grep . | median)
	awk -v n="$w" -v f="$FILES" -v p="$p" -v e="$e" 'BEGIN {
		printf "  %-8s plain %9.1f ops/s  metaecc %9.1f ops/s  metaecc/plain %.2f\n", n, f / p, f / e, p / e
		exit (p / e < 0.9) }' || rc=1
done
awk -v p="${CPU[plain]}" -v e="${CPU[ecc]}" -v hz="$(getconf CLK_TCK)" 'BEGIN {
	printf "  fsd CPU over all runs: plain %.2f s  metaecc %.2f s  metaecc/plain %.2f\n", p / hz, e / hz, e / p }'
exit $rc
