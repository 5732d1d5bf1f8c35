#!/usr/bin/env bash
# fsd in the cluster: one volume mounted by fsd on
# the three nodes of a local cluster (heartbeat 200 ms, dead threshold
# 10), in one run:
#  - metadata: each client creates FILES empty files (open O_CREAT|O_EXCL,
#    close), then stats each, then unlinks each (3 operations a file);
#    aggregate ops/s of 1, 2 and 3 nodes at once, each in its own
#    directory, then of 2 and 3 nodes in one shared directory, as ratios
#    to one node alone (the median of the per-round ratios);
#  - ping-pong: node1 pwrites 4 KiB at offset 0 of a file, node2 preads
#    and checks it, strictly alternately (told through a pipe); us per
#    handoff (a write and the other node's read are two handoffs of the
#    block) against the DLM EX ping-pong between the same two nodes
#    (bench/dlmd's, domain "bench", in the same round); and the same
#    handoffs of a file node1 keeps open for writing but only reads,
#    while it creates a file of its own each round (its lock leaves EX
#    with nothing under it changed, other changes pending:
#    doc/lock-handoff.md);
#  - recovery: node3 creates a file, writes and fsyncs it, writes more
#    and keeps it open; `localcluster kill 3`; node1 appends to that
#    file, tried every 10 ms until it succeeds: ms from the crash (as the
#    dead node's own mount sees it: its next fstat fails) to that write,
#    and in heartbeat intervals; also when node1's hbd declared node3
#    dead and when a survivor's fsd logged "slot N recovered".
# Clients and daemons run unpinned. Medians (and the range) of ROUNDS
# rounds, RECOVERIES kills for the recovery time; the load average before
# and after is printed, for a shared machine.
#   bench/fsd_cluster.sh [--rounds N] [--recoveries N] [--files N] [--shared-files N]
#                        [--parts LIST] [--mount-opts OPTS] [--lc-dir DIR] [--port PORT]
#   (defaults 7, 3, 1000, 100, "meta pingpong recovery"; a private state
#   directory and a random port). --parts runs only the parts named, as
#   --parts pingpong when comparing two builds' lock handoffs; --mount-opts
#   mounts fsd with -o OPTS (noatime: the ping-pong's reads no longer
#   update the file's atime, each an EX handoff of its own under relatime).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
source "$TOP/tests/lib.sh"

ROUNDS=7
RECOVERIES=3
FILES=1000		# per client per round, each in its own directory
SHARED_FILES=100	# per client per round in the shared directory (slow)
PP_ROUNDS=200		# write/read rounds of the fsd ping-pong
GRANTS=1000		# per DLM ping-pong client
IVL=200			# heartbeat interval, ms
THR=10			# dead threshold
PARTS="meta pingpong recovery"
MOUNT_OPTS=
LCDIR=/tmp/ocfs2-bench-fsd-cluster-$$
PORT=$((20000 + RANDOM % 20000))
usage() {
	echo "usage: bench/fsd_cluster.sh [--rounds N] [--recoveries N] [--files N]" \
	    "[--shared-files N] [--parts LIST] [--mount-opts OPTS] [--lc-dir DIR] [--port PORT]" >&2
	exit 2
}
while [[ $# -gt 0 ]]; do
	[[ $# -ge 2 ]] || usage
	case $1 in
	--rounds) ROUNDS=$2 ;;
	--recoveries) RECOVERIES=$2 ;;
	--files) FILES=$2 ;;
	--shared-files) SHARED_FILES=$2 ;;
	--parts) PARTS=$2 ;;
	--mount-opts) MOUNT_OPTS=$2 ;;
	--lc-dir) LCDIR=$2 ;;
	--port) PORT=$2 ;;
	*) usage ;;
	esac
	shift 2
done
for p in $PARTS; do
	[[ $p == meta || $p == pingpong || $p == recovery ]] || usage
done
# part NAME: is NAME one of the parts to run?
part() { [[ " $PARTS " == *" $1 "* ]]; }
CLIENT=$BUILD/bench/fsd_cluster
DLMCLIENT=$BUILD/bench/dlmd
for b in "$CLIENT" "$DLMCLIENT"; do
	[[ -x $b ]] || { echo "fsd_cluster bench: $b missing (make bench builds it)"; exit 1; }
done
# Never take down a cluster this script did not bring up.
[[ ! -e $LCDIR ]] || { echo "fsd_cluster bench: $LCDIR exists: choose another --lc-dir"; exit 1; }
export LOCALCLUSTER_DIR=$LCDIR LOCALCLUSTER_PORT=$PORT

source "$TOP/bench/lib.inc" fsd-cluster
die() {
	local k
	echo "fsd_cluster bench: $*"
	for k in 1 2 3; do
		echo "-- node$k: fsd warnings"
		lc log "$k" fsd 2>/dev/null | grep -v ': info: ' | tail -n 10
	done
	exit 1
}
START=$SECONDS
LOAD0=$(cut -d" " -f1-3 /proc/loadavg)

# now_us: the realtime clock in microseconds (the clients' instants).
now_us() { local t=${EPOCHREALTIME//[.,]/}; printf '%s' "$t"; }

# bg NAME CMD...: start CMD with its output in $W/NAME, to be killed at exit.
bg() {
	local name=$1
	shift
	"$@" >"$W/$name" 2>&1 &
	PIDS+=($!)
}

M=()
mnt() { M[$1]=$(lc mount "$1" ${MOUNT_OPTS:+-o "$MOUNT_OPTS"}) || die "node$1 did not mount: $(lc log "$1" fsd | tail -n 5)"; }

lc up 3 --hb-interval-ms $IVL --dead-threshold $THR >/dev/null || die "the cluster did not start"
for k in 1 2 3; do mnt $k; done

# ------------------------------------------------------------ metadata

# meta DIRMODE NODES FILES PREFIX: NODES clients at once (node1..NODES),
# in their own directories (own) or in one (shared); prints aggregate
# ops/s: every client's operations over the slowest client's time.
meta() {
	local mode=$1 n=$2 files=$3 prefix=$4 k dir start pids=() rc=0
	start=$(($(now_us) + 150000))
	for ((k = 1; k <= n; k++)); do
		if [[ $mode == own ]]; then dir=${M[$k]}/d$k; else dir=${M[$k]}/shared; fi
		"$CLIENT" meta "$dir" "$prefix-n$k" "$files" "$start" >"$W/meta$k" 2>&1 &
		pids+=($!)
	done
	for k in "${pids[@]}"; do wait "$k" || rc=1; done
	((rc == 0)) || { cat "$W"/meta? >&2; return 1; }
	cat "$W"/meta[1-$n] | awk '{ ops += $2; if ($1 > s) s = $1 } END { printf "%.1f\n", ops / s }'
}

if part meta; then
	for k in 1 2 3; do mkdir "${M[$k]}/d$k" || die "mkdir on node$k"; done
	mkdir "${M[1]}/shared" || die "mkdir shared"
	# Warm-up: each node's inode allocator grows once, the directories too.
	meta own 3 "$FILES" warm >/dev/null || die "metadata warm-up failed"
	meta shared 3 "$SHARED_FILES" warm >/dev/null || die "metadata warm-up failed"
	: >"$W/meta"
	for ((r = 0; r < ROUNDS; r++)); do
		line=
		for cfg in "own 1 $FILES" "own 2 $FILES" "own 3 $FILES" \
		    "shared 2 $SHARED_FILES" "shared 3 $SHARED_FILES"; do
			set -- $cfg
			v=$(meta "$1" "$2" "$3" "r$r") || die "metadata round $r ($cfg) failed"
			line+="$v "
		done
		echo "$line" >>"$W/meta"
	done
fi

# ------------------------------------------------------------ ping-pong

if part pingpong; then
	R1=$(lc rundir 1)
	R2=$(lc rundir 2)
	# As in bench/dlmd.sh, NL holders keep both nodes in the "bench" domain
	# for the run: without them, node1's client leaves the domain (and hands
	# its directory over) right after its last unlock, and node2's last
	# grant is sometimes lost in that leave.
	bg dlmhold1 "$DLMCLIENT" hold "$R1" keep1
	wait_for 30 grep -q ready "$W/dlmhold1" || die "node1's DLM holder: $(cat "$W/dlmhold1")"
	bg dlmhold2 "$DLMCLIENT" hold "$R2" keep2
	wait_for 30 grep -q ready "$W/dlmhold2" || die "node2's DLM holder: $(cat "$W/dlmhold2")"
	: >"$W/pp"
	for ((r = 0; r < ROUNDS; r++)); do
		f=$("$CLIENT" pingpong "${M[1]}/pingpong" "${M[2]}/pingpong" $PP_ROUNDS) ||
		    die "fsd ping-pong failed: $f"
		mkdir "${M[1]}/busy$r" || die "mkdir busy$r"
		g=$("$CLIENT" pingpong "${M[1]}/pingpong" "${M[2]}/pingpong" $PP_ROUNDS \
		    "${M[1]}/busy$r") || die "fsd ping-pong of reads failed: $g"
		d=$(dlm_pingpong "$DLMCLIENT" "$GRANTS" -1 -1) || die "DLM ping-pong failed"
		echo "$f $g $d" >>"$W/pp"
	done
	for k in 1 2; do kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null; unset 'PIDS[-1]'; done
fi

# ------------------------------------------------------------ recovery

# log_us HH:MM:SS.mmm: that time of today (the daemons' log stamps) in us.
log_us() { date -d "$(date +%F) $1" +%s%6N; }
# first_stamp PATTERN FILE SKIP [FILE SKIP]...: the stamp (us) of the
# first line matching PATTERN in each FILE past its first SKIP lines;
# the earliest of them, or nothing.
first_stamp() {
	local pat=$1 best= i t
	shift
	while [[ $# -ge 2 ]]; do
		t=$(tail -n +"$(($2 + 1))" "$1" 2>/dev/null | grep -m 1 -E "$pat" | cut -d' ' -f1)
		shift 2
		[[ -n $t ]] || continue
		t=$(log_us "$t")
		[[ -z $best || $t -lt $best ]] && best=$t
	done
	printf '%s' "$best"
}
lines() { wc -l <"$1" 2>/dev/null || echo 0; }

if part recovery; then
	: >"$W/reco"
	printf '%s\n' "recovery runs (ms from the crash; node3 killed, node1 appends):" >"$W/reco_runs"
	for ((r = 1; r <= RECOVERIES; r++)); do
		f=d3/held$r
		bg hold "$CLIENT" hold "${M[3]}/$f"
		wait_for 10 grep -q ready "$W/hold" || die "node3's holder: $(cat "$W/hold")"
		hold=${PIDS[-1]}
		L1=$LCDIR/node1/log
		L2=$LCDIR/node2/log
		h1=$(lines "$L1/hbd.log")
		f1=$(lines "$L1/fsd.log")
		f2=$(lines "$L2/fsd.log")
		t0=$(now_us)
		lc kill 3 >/dev/null || die "localcluster kill 3 failed"
		t1=$(now_us)
		ok=$("$CLIENT" append "${M[1]}/$f" 60000) || die "node1 never wrote $f after the crash: $ok"
		wait "$hold" 2>/dev/null
		unset 'PIDS[-1]'
		dead=$(awk '$1 == "dead" { print $2 }' "$W/hold")
		# Without the holder's word, the instant before localcluster kill.
		[[ -n $dead ]] || dead=$t0
		down=$(first_stamp 'node 3 .* is down' "$L1/hbd.log" "$h1")
		reco=$(first_stamp 'slot [0-9]+ recovered' "$L1/fsd.log" "$f1" "$L2/fsd.log" "$f2")
		who=$( (tail -n +"$((f1 + 1))" "$L1/fsd.log" | grep -q 'slot [0-9]* recovered' && echo node1) ||
		    (tail -n +"$((f2 + 1))" "$L2/fsd.log" | grep -q 'slot [0-9]* recovered' && echo node2) ||
		    echo none)
		size=$(stat -c %s "${M[1]}/$f")
		awk -v d="$dead" -v ok="${ok%% *}" -v att="${ok##* }" -v dn="${down:-0}" -v rc="${reco:-0}" \
		    -v t0="$t0" -v t1="$t1" -v who="$who" -v size="$size" -v r="$r" \
		    -v out="$W/reco" -v runs="$W/reco_runs" '
		function ms(x) { return x > 0 ? sprintf("%.0f", (x - d) / 1000) : "-" }
		function rel(x) { return x > 0 ? (x - d) / 1000 : "nan" }
		BEGIN {
			printf "%.1f %s %s\n", (ok - d) / 1000, rel(dn), rel(rc) >>out
			printf "  run %d: hbd says dead %s, slot recovered %s (by %s), first write %s" \
			    " (%d tries); localcluster kill took %.0f ms, the crash %.0f ms into it; file %d bytes\n",
			    r, ms(dn), ms(rc), who, ms(ok), att, (t1 - t0) / 1000, (d - t0) / 1000, size >>runs
		}'
		if ((r < RECOVERIES)); then
			lc umount 3 >/dev/null 2>&1
			lc start 3 >/dev/null || die "node3 did not start again"
			mnt 3
		fi
	done
fi

# ------------------------------------------------------------ report

AWK_MED='
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}'

echo "fsd on a three-node local cluster (one image, heartbeat $IVL ms, dead threshold $THR${MOUNT_OPTS:+, mounted -o $MOUNT_OPTS});" \
    "$(nproc) CPUs, clients and daemons unpinned; medians (and range) of $ROUNDS rounds;" \
    "load average $LOAD0 before, $(cut -d" " -f1-3 /proc/loadavg) after"
if part meta; then
	echo "metadata: per client, create (open O_EXCL + close), stat, unlink of $FILES files" \
	    "($SHARED_FILES in the shared directory), 3 ops a file; aggregate ops/s"
	awk "$AWK_MED"'
	{ for (c = 1; c <= 5; c++) { v[c, NR] = $c; q[c, NR] = $c / $1 } }
	END {
		split("1 node, its own directory|2 nodes, each its own directory|" \
		    "3 nodes, each its own directory|2 nodes, one shared directory|" \
		    "3 nodes, one shared directory", name, "|")
		printf "  %-36s %9s %9s %9s %9s\n", "", "ops/s", "min", "max", "x 1 node"
		for (c = 1; c <= 5; c++) {
			for (r = 1; r <= NR; r++) { x[r] = v[c, r]; y[r] = q[c, r] }
			m = med(x, NR)
			printf "  %-36s %9.0f %9.0f %9.0f %9.2f\n", name[c], m, x[1], x[NR], med(y, NR)
		}
	}' "$W/meta"
fi
if part pingpong; then
	echo "ping-pong: node1 pwrites 4 KiB, node2 preads it, $PP_ROUNDS rounds (2 handoffs each);" \
	    "then node1 creates a file of its own and preads the 4 KiB (the file open for writing)," \
	    "node2 preads them; DLM EX ping-pong node1<->node2, $GRANTS grants per client (bench/dlmd)"
	awk "$AWK_MED"'
	{ f[NR] = $1; g[NR] = $2; d[NR] = $3; q[NR] = $1 / $3; qg[NR] = $2 / $3 }
	END {
		printf "  %-36s %9s %9s %9s %9s\n", "per handoff", "us", "min", "max", "x DLM EX"
		m = med(f, NR)
		printf "  %-36s %9.1f %9.1f %9.1f %9.2f\n", "fsd write -> other node read", m, f[1], f[NR], med(q, NR)
		m = med(g, NR)
		printf "  %-36s %9.1f %9.1f %9.1f %9.2f\n", "fsd read, busy node -> other read", m, g[1], g[NR], med(qg, NR)
		m = med(d, NR)
		printf "  %-36s %9.1f %9.1f %9.1f %9.2f\n", "DLM EX ping-pong", m, d[1], d[NR], 1
	}' "$W/pp"
fi
if part recovery; then
	echo "recovery: node3 killed (SIGKILL, every daemon and fsd) holding open a file it wrote;" \
	    "node1 appends to it; $RECOVERIES kills"
	awk "$AWK_MED"'
	{ n++; w[n] = $1; if ($2 != "nan") dn[++nd] = $2; if ($3 != "nan") rc[++nr] = $3 }
	END {
		printf "  %-36s %9s %9s %9s %9s\n", "from the crash to", "ms", "min", "max", "hb ivls"
		if (nd) { m = med(dn, nd)
			printf "  %-36s %9.0f %9.0f %9.0f %9.1f\n", "node1 hbd declares node3 dead", m, dn[1], dn[nd], m / '$IVL' }
		if (nr) { m = med(rc, nr)
			printf "  %-36s %9.0f %9.0f %9.0f %9.1f\n", "its slot recovered (fsd log)", m, rc[1], rc[nr], m / '$IVL' }
		m = med(w, n)
		printf "  %-36s %9.0f %9.0f %9.0f %9.1f\n", "node1 first write to its file", m, w[1], w[n], m / '$IVL'
	}' "$W/reco"
	cat "$W/reco_runs"
fi
echo "(the whole benchmark took $((SECONDS - START)) s)"
