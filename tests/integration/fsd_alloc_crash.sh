#!/usr/bin/env bash
# A node of a two-node cluster killed (lc kill: every daemon and its fsd
# at once) in the middle of the allocation features' changes, on a volume
# with sparse,unwritten,inline-data,discontig-bg,append-dio; the survivor
# recovers its slot. At the moment of the kill node2 runs, at once:
# - an appending O_DIRECT write held between its dio record and its size
#   update (FSD_TEST_DIO_PAUSE): the survivor's recovery ends the record,
#   the size is the last fsync'ed one, the fsync'ed bytes are intact;
# - another such write, to a file node1 unlinks meanwhile: its record is
#   ended, and the file deleted when node1 unmounts;
# - a loop punching every other 64 KiB of a file, each punch fsync'ed:
#   the punched pieces read as zeros, the others as written;
# - a loop of small inline files each converted to extents by an append,
#   fsync'ed: each reads back whole.
# node2 comes back and mounts.
# After all of it the volume has no dio record, no cluster past the
# size of the appended file, and fsck.ocfs2 -fn is clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

D=$FSD_DIR
IMG=$D/shared.img
M=()
MIB=1048576
UNIT=65536

recovered() { lc log 1 fsd | grep -c 'slot [0-9]* recovered'; }
recovered_above() { (($(recovered) > $1)); }
# kill_node2: node2 dies; node1 recovers its slot.
kill_node2() {
	local before
	before=$(recovered)
	lc kill 2 >/dev/null
	bg_stop_all
	check "node1 recovers node2's slot" wait_for 30 recovered_above "$before"
}
# restart_node2: node2 back up and mounted.
restart_node2() {
	lc umount 2 >/dev/null 2>&1
	lc start 2 >/dev/null
	run_check "node2 mounts again" node_mount 2
}
# node_mount 2 with its appending O_DIRECT writes held before their size update.
mount2_paused() { FSD_TEST_DIO_PAUSE=$D/pause node_mount 2; }

check "mkfs (cluster, the five features)" mkfs_img "$IMG" --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C 4096 -J size=8M --fs-feature-level=max-compat \
    --fs-features=sparse,unwritten,inline-data,discontig-bg,append-dio
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
run_check "node1 mounts" node_mount 1
run_check "node2 mounts with the dio crash point" mount2_paused

echo "-- node2 killed while it punches holes, converts inline files and appends O_DIRECT"
dappend "${M[2]}/d" 65536 4 fsync
ino=$(stat -c %i "${M[2]}/d")
dappend "${M[2]}/u" 65536 2 fsync
uino=$(stat -c %i "${M[2]}/u")
head -c $((32 * MIB)) /dev/urandom >"$D/p.model"
cp "$D/p.model" "${M[1]}/p"
sync "${M[1]}/p"
: >"$D/punched"
# every other 64 KiB, each punch fsync'ed: still under way when node2 dies
(for k in $(seq 0 2 510); do
	fallocate -p -o $((k * UNIT)) -l $UNIT "${M[2]}/p" || break
	sync "${M[2]}/p" || break
	echo "$k" >>"$D/punched"
done) 2>/dev/null &
BG+=($!)
: >"$D/converted"
(i=0; while :; do
	i=$((i + 1))
	f=${M[2]}/c$i
	head -c 6100 /dev/urandom >"$D/c$i.src"
	head -c 100 "$D/c$i.src" >"$f" && sync "$f" || break
	tail -c 6000 "$D/c$i.src" >>"$f" && sync "$f" || break
	echo "c$i $(md5sum <"$D/c$i.src" | cut -d' ' -f1)" >>"$D/converted"
done) 2>/dev/null &
BG+=($!)
wait_for 10 sh -c "test \$(wc -l <'$D/punched') -ge 3 && test \$(wc -l <'$D/converted') -ge 3"
: >"$D/pause"
dappend "${M[2]}/d" "$MIB" 1 >/dev/null 2>&1 &
BG+=($!)
dappend "${M[2]}/u" "$MIB" 1 >/dev/null 2>&1 &
BG+=($!)
check "node2's appends stop before their size update" wait_for 10 \
    test -e "$D/pause.$ino" -a -e "$D/pause.$uino"
rm "$D/pause"
check "node1 unlinks the other file in the middle of node2's append" rm "${M[1]}/u"
kill_node2
echo "  node2 died after $(wc -l <"$D/punched") of 256 punches and $(wc -l <"$D/converted") conversions"
check "node2 died in the middle of its punches" test "$(wc -l <"$D/punched")" -ge 3 -a "$(wc -l <"$D/punched")" -lt 256
check "node2 converted some before it died" test "$(wc -l <"$D/converted")" -ge 3

dio_ended() { lc log 1 fsd | grep -q "inode $1: appending O_DIRECT write of slot"; }
both_ended() { dio_ended "$ino" && dio_ended "$uino"; }
check "node1's recovery ended node2's dio records" wait_for 10 both_ended
check_eq "node1 sees the fsync'ed size" 262144 "$(stat -c %s "${M[1]}/d")"
dmodel 65536 4 >"$D/d.model"
check "node1 reads the fsync'ed bytes" cmp "${M[1]}/d" "$D/d.model"
dappend "${M[1]}/d" 65536 1
check_eq "node1 appends after the recovery" 327680 "$(stat -c %s "${M[1]}/d")"

# punched_ok: each punched 64 KiB reads as zeros, each odd one as
# written, the one in flight as either.
punched_ok() {
	python3 - "${M[1]}/p" "$D/p.model" "$D/punched" "$UNIT" <<'EOF'
import sys
got, want = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
punched = {int(l) for l in open(sys.argv[3]) if l.strip()}
unit, bad = int(sys.argv[4]), 0
if len(got) != len(want):
    sys.exit("size %d, not %d" % (len(got), len(want)))
for k in range(len(want) // unit):
    g, w = got[k * unit:(k + 1) * unit], want[k * unit:(k + 1) * unit]
    if g == w and k in punched:
        print("unit %d was punched, reads as written" % k); bad = 1
    elif g != w and g != bytes(unit):
        print("unit %d is neither written nor zeros" % k); bad = 1
    elif g != w and k % 2:
        print("unit %d was never punched, reads as zeros" % k); bad = 1
sys.exit(bad)
EOF
}
check "node1 reads each 64 KiB as punched or as written" punched_ok
check_eq "the size stays" $((32 * MIB)) "$(stat -c %s "${M[1]}/p")"
converted_ok() {
	local f sum bad=0
	while read -r f sum; do
		[[ $(md5sum <"${M[1]}/$f" | cut -d' ' -f1) == "$sum" ]] || { echo "$f damaged"; bad=1; }
	done <"$D/converted"
	return $bad
}
check "node1 reads every fsync'ed converted file whole" converted_ok

echo "-- node2 comes back"
restart_node2
dmodel 65536 5 >"$D/d5.model"
check "node2 reads the file as node1 left it" cmp "${M[2]}/d" "$D/d5.model"
check "node2 unmounts" lc umount 2

echo "-- the volume afterwards"
check "node1 unmounts" lc umount 1
check_eq "no dio record or orphan is left" 0 "$(for s in 0000 0001; do
	debugfs.ocfs2 -R "ls -l //orphan_dir:$s" "$IMG" 2>/dev/null; done | grep -cE 'dio-|[0-9a-f]{16}$')"
check_eq "no cluster past the appended file's size" 80 \
    "$(debugfs.ocfs2 -R 'stat /d' "$IMG" 2>/dev/null | sed -n 's/.*Clusters: \([0-9]*\).*/\1/p')"
check "fsck clean" fsck_clean "$IMG"

finish
