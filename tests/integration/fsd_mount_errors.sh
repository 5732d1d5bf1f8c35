#!/usr/bin/env bash
# Cluster mounts that must fail, and how: each refusal is checked for
# fsd's exact message and exit status, and for leaving no mount, no
# heartbeat region and no lock domain behind. A volume with no free slot,
# another cluster's or another stack's volume, a local volume mounted
# elsewhere, a node without quorum (fenced), and links missing after the
# wait. Then a read-only cluster mount: it sees another node's writes,
# refuses its own with EROFS, takes no slot and cannot write to the disk.
# One local cluster of three nodes serves every case; fsck.ocfs2 finds
# every volume clean at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

export LOCALCLUSTER_NAME=lc
lc_setup
trap 'cluster_cleanup 3 fsd hbd netd' EXIT

M=()
slots() { debugfs.ocfs2 -R slotmap "$1" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { printf "%s%s:%s", s, $1, $2; s = " " }'; }
jflags() { debugfs.ocfs2 -R "stat //journal:$2" "$1" 2>/dev/null | sed -n 's/.*Journal Flags: *\(.*\)/\1/p' | xargs; }
# nothing_left K: node K holds no heartbeat region and no lock domain.
nothing_left() {
	o2 "$1" --json status | jq -e '(.regions | length == 0) and (.domains | length == 0)'
}
# session_clean K: since node K's last mount started, its fsd warned of
# nothing and its last word was the unmount.
session_clean() {
	local s
	s=$(lc log "$1" fsd | awk '/^--- /{ n = NR } { l[NR] = $0 } END { for (i = n; i <= NR; i++) print l[i] }')
	! grep -q warning <<<"$s" && tail -n 1 <<<"$s" | grep -q ': unmounted$'
}
hb_stop() { o2 "$1" heartbeat stop "$IMG"; }
fenced() { o2 "$1" --json status | jq -e .fenced; }
no_domain() { o2 "$1" --json status | jq -e '.domains | length == 0'; }

# refused DESC K TEXT IMG [FSD-ARGS...]: fsd run as node K on IMG must exit
# with status 1, its last word "cannot mount IMG: TEXT", and mount nothing.
# A hang is stopped after 30 s and fails.
refused() {
	local desc=$1 k=$2 text=$3 img=$4 dir=$FSD_DIR/m$2 out rc=0 said
	shift 4
	mkdir -p "$dir"
	out=$(lc exec "$k" timeout 30 "$FSD" "$@" "$img" "$dir" 2>&1) || rc=$?
	said=$(grep -o 'warning: cannot mount .*' <<<"$out" | tail -n 1)
	if ((rc == 1)) && [[ $said == "warning: cannot mount $img: $text" ]] && ! mountpoint -q "$dir"; then
		pass "$desc"
	else
		fail "$desc (status $rc, expected 1 and \"cannot mount $img: $text\")"
		printf '%s\n' "$out" | sed 's/^/       | /' | tail -n 10
	fi
}

echo "-- setup: the cluster's volume has 2 slots for 3 nodes"
IMG=$FSD_DIR/two.img
check "mkfs -N 2" mkfs_img_size "$IMG" 128M --fs-feature-level=max-compat --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -J size=8M
if ! lc up 3 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 3"
	finish
	exit 1
fi

echo "-- no free slot"
run_check "node1 mounts" node_mount 1
run_check "node2 mounts" node_mount 2
check_eq "both slots are taken" "0:1 1:2" "$(slots "$IMG")"
refused "node3 is refused: no free slot, naming who has the slots" 3 \
    "no free slot: the volume has 2 slots, in use by nodes 1, 2 (tunefs.ocfs2 -N adds slots)" "$IMG"
check "node3 keeps no heartbeat region and no lock domain" wait_for 5 nothing_left 3
check_eq "the slot map is unchanged" "0:1 1:2" "$(slots "$IMG")"
echo one >"${M[1]}/f"
check_eq "node2 reads node1's write" one "$(cat "${M[2]}/f")"
echo two >>"${M[2]}/f"
check_eq "node1 reads node2's append" "$(printf 'one\ntwo')" "$(cat "${M[1]}/f")"

echo "-- another cluster's volume, another stack's"
check "mkfs --cluster-name=other" mkfs_img_size "$FSD_DIR/other.img" 64M --fs-feature-level=max-compat \
    --cluster-stack=o2cb --cluster-name=other -N 2
refused "a volume of cluster \"other\" is refused, naming both clusters" 3 \
    'the volume belongs to cluster "other", this node runs "lc"' "$FSD_DIR/other.img"
check "mkfs --cluster-stack=pcmk" mkfs_img_size "$FSD_DIR/pcmk.img" 64M --fs-feature-level=max-compat \
    --cluster-stack=pcmk --cluster-name=pc -N 2
refused "a pacemaker volume is refused, naming its stack" 3 \
    'the volume uses cluster stack "pcmk" (cluster "pc"); this node runs stack "o2cb"' "$FSD_DIR/pcmk.img"
check "node3 keeps nothing" nothing_left 3

echo "-- a read-only mount beside a read-write one"
check "node2 unmounts" lc umount 2
run_check "node2 mounts read-only" node_mount 2 -o ro
check_eq "node2 takes no slot" "0:1" "$(slots "$IMG")"
check_eq "journal:0001 stays clean" "" "$(jflags "$IMG" 0001)"
# fsd's only way to the disk is its descriptors of the image: all read-only.
ro_fds() {
	local pid=$1 fd n=0
	for fd in /proc/"$pid"/fd/*; do
		[[ $(readlink "$fd") == "$(realpath "$IMG")" ]] || continue
		# O_ACCMODE of the flags (octal) must be O_RDONLY
		(((8#$(sed -n 's/^flags:[[:space:]]*//p' /proc/"$pid"/fdinfo/"${fd##*/}") & 3) == 0)) || return 1
		n=$((n + 1))
	done
	((n > 0))
}
check "node2's fsd holds the image read-only" ro_fds "$(cat "$LOCALCLUSTER_DIR/node2/pids/fsd.pid")"
echo new >"${M[1]}/new"
check_eq "node2 reads node1's new file" new "$(cat "${M[2]}/new")"
echo three >>"${M[1]}/f"
check_eq "node2 reads node1's append" "$(printf 'one\ntwo\nthree')" "$(cat "${M[2]}/f")"
mkdir "${M[1]}/d"
mv "${M[1]}/f" "${M[1]}/d/g"
check "node2 sees node1's rename" sh -c "test ! -e '${M[2]}/f' && test \"\$(cat '${M[2]}/d/g')\" = \"\$(printf 'one\\ntwo\\nthree')\""
expect_error "node2 cannot create" "Read-only file system" touch "${M[2]}/x"
expect_error "node2 cannot append" "Read-only file system" sh -c "echo x >>'${M[2]}/new'"
expect_error "node2 cannot truncate" "Read-only file system" truncate -s 0 "${M[2]}/new"
expect_error "node2 cannot mkdir" "Read-only file system" mkdir "${M[2]}/e"
expect_error "node2 cannot rename" "Read-only file system" mv "${M[2]}/new" "${M[2]}/d/new"
expect_error "node2 cannot unlink" "Read-only file system" rm "${M[2]}/new"
expect_error "node2 cannot chmod" "Read-only file system" chmod 600 "${M[2]}/new"
check_eq "node1 sees none of it" "d lost+found new" "$(ls "${M[1]}" | xargs)"
check_eq "node1 still has the only slot" "0:1" "$(slots "$IMG")"
check "node2 unmounts" lc umount 2
check "node2's fsd warned of nothing and ended with the unmount" session_clean 2
check "node1 unmounts" lc umount 1
check_eq "no slot is taken" "" "$(slots "$IMG")"

echo "-- the read-write node dies beside a read-only one"
# node2 is the first to use kept/ and kept/f, so its dlmd masters their
# locks and knows, when node1 dies, that node1 held kept/f at PR only;
# node1 dies holding dd/durable at EX.
run_check "node1 mounts" node_mount 1
mkdir "${M[1]}/kept" "${M[1]}/dd"
echo old >"${M[1]}/kept/f"
check "node1 unmounts" lc umount 1
run_check "node2 mounts read-only" node_mount 2 -o ro
check_eq "node2 reads kept/f" old "$(cat "${M[2]}/kept/f")"
run_check "node1 mounts" node_mount 1
echo new >"${M[1]}/kept/f"
echo durable | dd of="${M[1]}/dd/durable" conv=fsync status=none
# node2's lock on kept/f went to NL for that write; node3's read brings
# node1's down to PR.
run_check "node3 mounts read-only" node_mount 3 -o ro
check_eq "node3 reads node1's kept/f" new "$(cat "${M[3]}/kept/f")"
check "node3 unmounts" lc umount 3
lc kill 1 >/dev/null
check "node2 leaves node1's slot to a read-write mount" wait_for 20 grep -q \
    'node 1 died: its slot waits for a read-write mount to recover it' "$LOCALCLUSTER_DIR/node2/log/fsd.log"
# Until then node2 waits only on what node1 held at EX.
check_eq "node2 stats kept/f, which node1 held at PR, before the recovery" 4 \
    "$(timeout 10 stat -c %s "${M[2]}/kept/f")"
cat "${M[2]}/dd/durable" >"$LOCALCLUSTER_DIR/durable.out" 2>&1 &
WAITER=$!
sleep 2
check "node2's read of dd/durable, which node1 held at EX, waits for the recovery" kill -0 "$WAITER"
refused "a read-only mount on node3 is refused: node1's journal needs recovery" 3 \
    "the journal of slot 0 needs recovery; a read-only mount cannot replay it (a read-write mount on any node will)" \
    "$IMG" -o ro
run_check "node3 mounts read-write, recovering node1's slot" node_mount 3
check "node2 learns that another node recovered it" wait_for 10 grep -q \
    "node 1's slot was recovered by another node" "$LOCALCLUSTER_DIR/node2/log/fsd.log"
check "the waiting read ends" wait_for 20 sh -c "! kill -0 $WAITER"
check_eq "the waiting read got what node1 fsync'ed" durable "$(cat "$LOCALCLUSTER_DIR/durable.out")"
check_eq "node2 reads what node1 fsync'ed" durable "$(timeout 20 cat "${M[2]}/dd/durable")"
check "node3 unmounts" lc umount 3
check "node2 unmounts" lc umount 2
lc umount 1 >/dev/null 2>&1
check "node1's daemons start again" lc start 1
check_eq "no slot is taken" "" "$(slots "$IMG")"

echo "-- a local volume: one node at a time, without the cluster"
# Nodes 1 and 2 share this machine, where fsd's lock on the image keeps a
# second fsd out; on two machines nothing would (nor with the kernel).
LOCAL=$FSD_DIR/local.img
check "mkfs -M local" mkfs_img_size "$LOCAL" 64M --fs-feature-level=max-compat -M local
mkdir -p "$FSD_DIR/l1" "$FSD_DIR/l2"
lc exec 1 "$FSD" "$LOCAL" "$FSD_DIR/l1" >"$FSD_DIR/l1.log" 2>&1 &
FSD_PID=$!
FSD_PIDS+=("$FSD_PID")
FSD_MOUNTS+=("$FSD_DIR/l1" "$FSD_DIR/l2")
check "node1 mounts it" wait_for 10 mountpoint -q "$FSD_DIR/l1"
check_eq "as node 0, in its only slot" "0:0" "$(slots "$LOCAL")"
check "without a heartbeat region" nothing_left 1
echo local >"$FSD_DIR/l1/f"
refused "node2 is refused while node1 has it" 2 \
    "another fsd on this machine has this local volume mounted: a local volume (mkfs.ocfs2 -M local) mounts on one node at a time" "$LOCAL"
run_check "node1 unmounts it" fsd_umount "$FSD_DIR/l1"
lc exec 2 "$FSD" "$LOCAL" "$FSD_DIR/l2" >"$FSD_DIR/l2.log" 2>&1 &
FSD_PID=$!
FSD_PIDS+=("$FSD_PID")
check "then node2 mounts it" wait_for 10 mountpoint -q "$FSD_DIR/l2"
check_eq "node2 reads what node1 wrote" local "$(cat "$FSD_DIR/l2/f")"
run_check "node2 unmounts it" fsd_umount "$FSD_DIR/l2"

echo "-- no quorum; links missing after the wait"
# Nodes 1 and 2 heartbeat and are linked. When node1's netd stops, node2
# has half of the two heartbeating nodes without the lowest: it fences
# itself once the quorum delay ((THR + 2) x IVL) has passed.
check "node1 heartbeats" hb_start 1
check "node2 heartbeats" hb_start 2
check "and are linked" wait_for 10 link_is 2 1 up
kill "$(netd_pid 1)"
check "node2 fences itself" wait_for 15 fenced 2
refused "node2, fenced, is refused, naming the lost quorum" 2 \
    "this node is fenced: asked by pid $(netd_pid 2): quorum lost: connected to half (1 of 2) of the heartbeating nodes, without the lowest-numbered one (node 1)" "$IMG"
check "node2 joined no lock domain (its region is o2ctl's)" no_domain 2
# Node1 heartbeats without a netd: node3 waits for a link that never comes.
t0=$(date +%s%N)
refused "node3 is refused after the wait, naming the node without a link" 3 \
    "no network link to heartbeating node(s) node1 (1) after 2 s" "$IMG" -o link_wait=2
ms=$((($(date +%s%N) - t0) / 1000000))
echo "  refused after $ms ms"
check "... after the 2 s, not much later" test "$ms" -ge 2000 -a "$ms" -le 8000
check "node3 keeps nothing" wait_for 5 nothing_left 3
check "node1's netd starts again" lc start 1
check "node2's fence is cleared" o2 2 clear-fence
run_check "node2 mounts again" node_mount 2
check "node2 unmounts" lc umount 2
check "node1 stops heartbeating" hb_stop 1
check "node2 stops heartbeating" hb_stop 2

echo "-- fsck"
for img in "$IMG" "$LOCAL" "$FSD_DIR/other.img" "$FSD_DIR/pcmk.img"; do
	check "fsck.ocfs2 -fn finds $(basename "$img") clean" fsck_clean "$img"
done
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! cat '$LOCALCLUSTER_DIR'/node*/log/fsd.log '$FSD_DIR'/l[12].log | grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer'"
finish
