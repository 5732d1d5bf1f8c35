#!/usr/bin/env bash
# The cost of disk quotas (doc/quota.md): fsd on two volumes, one with
# usrquota,grpquota, in one run on the same storage, a non-root user
# (uid 4001, so that every growth is checked against its limits, none
# set) creating FILES empty files in one directory, writing 8 KiB into
# each (a cluster charged per file), then unlinking them (each sync'ed).
# Each figure is the median of RUNS runs, alternating between the
# volumes; the ratio is quota / plain throughput, and the CPU time each
# fsd spent over all the runs, less exposed to the machine's other load:
# the bench fails when the quota volume's fsd needs more than 1.5 times
# the plain one's.
#   bench/fsd_quota.sh [--files N] [--runs N] [--dir DIR]
#   (defaults 3000, 3, /tmp)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OCFS2_BUILD:-$TOP/build}
FILES=3000
RUNS=3
DIR=/tmp
source "$TOP/bench/options.inc"
bench_options "bench/fsd_quota.sh [--files N] [--runs N] [--dir DIR]" files runs dir -- "$@"
U=4001

W=$(mktemp -d "$DIR/fsd-quota-bench.XXXXXX")
chmod 755 "$W"
source "$TOP/bench/fsd_lib.inc"
mkfs_vol plain 1G sparse || exit 1
mkfs_vol quota 1G sparse,usrquota,grpquota || exit 1
for v in plain quota; do mount_vol "$v" || exit 1; done

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
as_user() { setpriv --reuid=$U --regid=$U --clear-groups "$@"; }

# work VOLUME create|write|unlink: the seconds it took, as the user.
work() {
	local t=$(now)
	as_user /usr/bin/python3 - "$W/$1/d" "$FILES" "$2" <<'EOF'
import os, sys
d, n, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(n):
    p = "%s/f%06d" % (d, i)
    if what == "create":
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif what == "write":
        fd = os.open(p, os.O_WRONLY)
        os.write(fd, b"q" * 8192)
        os.close(fd)
    else:
        os.unlink(p)
fd = os.open(d, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
EOF
	secs "$t" "$(now)"
}
declare -A CPU=([plain]=0 [quota]=0)
cpu_add() {
	local f
	read -ra f <"/proc/${PID[$1]}/stat" || return 1
	CPU[$1]=$((CPU[$1] + f[13] + f[14]))
}

declare -A T=()
for v in plain quota; do
	mkdir "$W/$v/d"
	chown $U:$U "$W/$v/d"
done
for i in $(seq "$RUNS"); do
	order="plain quota"
	((i % 2 == 0)) && order="quota plain"
	for v in $order; do
		for w in create write unlink; do
			T[$w.$v]+="$(work "$v" "$w") "
		done
	done
done
for v in plain quota; do cpu_add "$v"; done
echo "fsd: sparse without and with usrquota,grpquota on" \
    "$(df --output=fstype "$W" | tail -n 1) ($FILES files as uid $U, median of $RUNS)"
rc=0
for w in create write unlink; do
	p=$(tr ' ' '\n' <<<"${T[$w.plain]}" | grep . | median)
	q=$(tr ' ' '\n' <<<"${T[$w.quota]}" | grep . | median)
	awk -v n="$w" -v f="$FILES" -v p="$p" -v q="$q" 'BEGIN {
		printf "  %-8s plain %9.1f ops/s  quota %9.1f ops/s  quota/plain %.2f\n", n, f / p, f / q, p / q }'
done
awk -v p="${CPU[plain]}" -v q="${CPU[quota]}" -v hz="$(getconf CLK_TCK)" 'BEGIN {
	printf "  fsd CPU over all runs: plain %.2f s  quota %.2f s  quota/plain %.2f\n", p / hz, q / hz, q / p
	exit (q / p > 1.5) }' || rc=1
exit $rc
