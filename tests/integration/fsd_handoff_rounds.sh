#!/usr/bin/env bash
# How many times a file's lock changes hands when one node writes it and
# the other reads it, in turns (doc/lock-handoff.md, "Requests per
# round"): counted as the upconverts each fsd asks dlmd for (o2ctl
# mounts). Under relatime each read moves atime, and each write(2) asks
# for security.capability first (the kernel's file_remove_privs): one
# request for EX per node and round, not a PR then an EX. Every read sees
# the round's bytes and, under relatime, an atime past the write's mtime.
# Then both nodes only read: the reader's guess that atime moves again
# ends, both share PR, and the rounds ask dlmd for nothing. The write
# rounds' handoffs go from the BAST to the flush thread, which writes
# home and converts: each fsd's downconvert thread (fsd-downconv) is
# not woken for them. Handoffs of an inode's times alone write its block
# home in place: the disk shows the times the other node sees, and keeps
# them through node2's kill and node1's recovery of its slot. fsck.ocfs2
# finds the volume clean at the end.
#   FSD_HANDOFF_ROUNDS   rounds of each part (default 40)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

ROUNDS=${FSD_HANDOFF_ROUNDS:-40}

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()
mounts_json() { lc exec "$1" "$O2CTL" mounts --json; }
# upconverts: node1's and node2's requests for a higher level, summed.
upconverts() {
	{ mounts_json 1; mounts_json 2; } | jq -s 'map(.[0].lock_upconverts) | add'
}

# rounds MODE A B N: N rounds on file A (node1's mount) and B (node2's):
# MODE write: node1 (file open O_RDWR) pwrites 4 KiB, node2 preads it;
# MODE read: both only pread. Each round's read checks the bytes; under
# write, every 8th round node2 also checks that its read moved atime past
# the write's mtime (a stat, which takes the lock too: not in the count).
# Prints the upconverts the rounds cost, the stats' excluded.
rounds() {
	python3 - "$@" <<'PY'
import json, os, subprocess, sys
mode, a, b, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def upconverts():
    return int(subprocess.run(["bash", "-c", "upconverts"], capture_output=True,
                              text=True, check=True).stdout)
fa = os.open(a, os.O_RDWR if mode == "write" else os.O_RDONLY)
fb = os.open(b, os.O_RDONLY)
cost = 0
start = upconverts()
for i in range(n):
    want = bytes((i * 7 + j) % 251 for j in range(4096)) if mode == "write" else None
    if mode == "write":
        os.pwrite(fa, want, 0)
    else:
        want = os.pread(fa, 4096, 0)
    got = os.pread(fb, 4096, 0)
    if got != want:
        sys.exit(f"round {i}: node2 read other bytes than node1 {'wrote' if mode == 'write' else 'read'}")
    if mode == "write" and i % 8 == 7:
        cost += upconverts() - start
        st = os.stat(b)
        if st.st_atime_ns <= st.st_mtime_ns:
            sys.exit(f"round {i}: node2's read left atime {st.st_atime_ns} at or before mtime {st.st_mtime_ns}")
        start = upconverts()
cost += upconverts() - start
print(cost)
PY
}
# dc_switches K: context switches of node K's downconvert thread so far.
dc_switches() {
	local pid t
	pid=$(cat "$LOCALCLUSTER_DIR/node$1/pids/fsd.pid")
	for t in /proc/"$pid"/task/*; do
		if [[ $(cat "$t/comm" 2>/dev/null) == fsd-downconv ]]; then
			awk '/ctxt_switches/ { n += $2 } END { print n }' "$t/status"
			return
		fi
	done
	echo "no fsd-downconv thread in node$1's fsd ($pid)" >&2
	return 1
}

export -f upconverts mounts_json lc
export O2CTL LOCALCLUSTER LOCALCLUSTER_DIR LOCALCLUSTER_PORT

echo "-- setup"
mount_two
head -c 4096 /dev/zero >"${M[1]}/f"
check "node2 sees the file" test -s "${M[2]}/f"
# the first rounds settle where each lock sits
rounds write "${M[1]}/f" "${M[2]}/f" 4 >/dev/null

echo "-- write on node1, read on node2 ($ROUNDS rounds, relatime)"
sw1=$(dc_switches 1) && sw2=$(dc_switches 2) || fail "the downconvert threads are not found"
if n=$(rounds write "${M[1]}/f" "${M[2]}/f" "$ROUNDS"); then
	pass "every read saw the round's bytes and moved atime"
	# two handoffs a round: node2's EX (its read and atime), node1's EX
	# (its xattr lookup and write); a few more for the kernel's own
	# lookups between rounds, and where a write in the clock tick of the
	# one before left mtime (so atime) alone, for reads at PR again
	check "at most 2 upconverts a round, and a few ($n in $ROUNDS rounds)" \
	    test "$n" -le $((2 * ROUNDS + ROUNDS / 4 + 4))
	# Each node gives the lock once a round. Before, its downconvert
	# thread woke three times or more for each (the BAST, the flush's
	# end, the write home's I/O); now a hold that grew for a round, a
	# flush it looks at unasked, an idle lock dropped wake it sometimes.
	for k in 1 2; do
		d=$(($(dc_switches $k) - sw$k))
		check "node$k's downconvert thread sat the handoffs out ($d wakeups in $ROUNDS rounds)" \
		    test "$d" -lt $((2 * ROUNDS))
	done
else
	fail "write/read rounds: $n"
fi

echo "-- times go home in place, and stay when node2 dies"
# A handoff whose only change is an inode's times writes that block home
# in place, no log (doc/lock-handoff.md): after the write rounds both
# nodes have done so. Then node1 writes, node2 reads (its atime moves),
# node1 stats: node2's handoff wrote the block home, which the disk shows
# as node1 sees it, before and after node2 is killed and node1 replays
# its log.
in_place() { mounts_json "$1" | jq '.[0].journal_in_place'; }
# times_seen K: atime and mtime of f as node K's mount shows them, in ns
times_seen() {
	python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print(f"atime:{s.st_atime_ns} mtime:{s.st_mtime_ns}")' \
	    "${M[$1]}/f"
}
# times_home: the same from f's inode block on the disk
times_home() {
	local name sec nsec rest out=()
	while read -r name sec nsec rest; do
		case $name in
		atime: | mtime:) out+=("$name$((sec * 1000000000 + nsec))") ;;
		esac
	done < <(debugfs.ocfs2 -R "stat /f" "$IMG" 2>/dev/null)
	echo "${out[*]}"
}
for k in 1 2; do
	check "node$k wrote times home in place ($(in_place $k) times)" test "$(in_place $k)" -gt 0
done
before=$(in_place 2)
sleep 0.02
python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); os.pwrite(fd, b"t" * 4096, 0); os.close(fd)' "${M[1]}/f"
check "node2 reads node1's write" sh -c "head -c 1 '${M[2]}/f' | grep -q t"
seen=$(times_seen 1)
check "node2's handoff of its atime went home in place" test "$(in_place 2)" -gt "$before"
check_eq "the disk holds the times node1 sees" "$seen" "$(times_home)"
recovered() { grep -c 'slot [0-9]* recovered (' "$LOCALCLUSTER_DIR/node1/log/fsd.log"; }
recovered_since() { (($(recovered) > $1)); }
seen1=$(recovered)
lc kill 2 >/dev/null
check "node1 recovers node2's slot" wait_for 30 recovered_since "$seen1"
check_eq "node1 sees the same times after the recovery" "$seen" "$(times_seen 1)"
check_eq "the disk still holds them" "$seen" "$(times_home)"
lc umount 2 >/dev/null 2>&1
lc start 2 >/dev/null
run_check "node2 mounts again" node_mount 2

echo "-- both nodes only read ($ROUNDS rounds)"
rounds read "${M[1]}/f" "${M[2]}/f" 2 >/dev/null
if n=$(rounds read "${M[1]}/f" "${M[2]}/f" "$ROUNDS"); then
	# (the orphan scan's lock and the like may take a few in a long run)
	check "reads shared PR: no upconverts ($n in $ROUNDS rounds)" test "$n" -le $((2 + ROUNDS / 50))
else
	fail "read rounds: $n"
fi

echo "-- end"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"
finish
