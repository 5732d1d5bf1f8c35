#!/usr/bin/env bash
# Disk quotas (usrquota, grpquota; doc/quota.md). A volume made with
# --fs-features=usrquota,grpquota mounts read-write; what users own is
# counted in the global quota files as fsck.ocfs2 counts it (each inode's
# clusters in bytes, one inode each): the usage o2ctl quota reports
# equals du and find over a user's directory after writes, mkdir,
# symlinks, fifos, chown (usage moves), deletes (usage comes back). Limits
# set with o2ctl quota: a non-root user past its block hard limit gets
# EDQUOT from write(2) (O_DIRECT) and from fsync (the kernel's cache
# written back), past its inode hard limit from creat; root is exempt
# (CAP_SYS_RESOURCE in the kernel); a soft limit passed starts the grace
# time, and once a grace time (set to 2 s with o2ctl quota grace) is
# over, growth fails with EDQUOT until usage is back at the soft limit. fsd killed after fsync'ed work: the usage is exact after the
# journal's replay. Two nodes writing as one uid at once: the global file
# holds the sum, and a limit one node sets the other enforces; one dies
# holding an unlinked file open: the survivor's recovery deletes it and
# the usage equals du again. A max-features volume (metaecc) mounts read-write after
# moving what a crashed kernel node left in slot 1's local quota files
# into the global ones, and passes a POSIX smoke test with holes, punched
# ranges and a reflinked file written into (shared clusters count in each
# file, as fsck counts them). A corrupt leaf of the global file (metaecc)
# is EIO with its block logged, after which the mount takes no change; a
# corrupt header refuses the mount, naming the file and the block. The
# global files are also
# read offline (debugfs.ocfs2 dump, a reader of their tree of its own
# below) and checked against the reports; fsck.ocfs2 -fn is clean after
# each part.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
RUN=$D/run
IMG=$D/quota.img
mkdir -p "$RUN"
# the users below reach their directories through it
chmod 755 "$D"

as_user() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
# du_usage DIR: "bytes inodes" of everything under DIR (DIR included), as the quota counts.
du_usage() { echo "$(du -s -B1 "$1" | cut -f1) $(find "$1" -printf '%i\n' | sort -u | wc -l)"; }
# reported MNT user|group ID [O2CTL-ARGS]: "space inodes" o2ctl quota reports ("0 0": none).
reported() {
	local t=$2 id=$3
	[[ $t == group ]] || t=user
	"$O2CTL" "${@:4}" --json quota "$1" report | jq -r --arg t "$t" --argjson id "$id" '
		[.entries[] | select(.type == $t and .id == $id)] |
		if length == 0 then "0 0" else "\(.[0].space) \(.[0].inodes)" end'
}
rep() { reported "$MNT" "$@" --rundir "$RUN"; }
field() { "$O2CTL" --rundir "$RUN" --json quota "$MNT" report | jq -r "[.entries[] | select(.type == \"$1\" and .id == $2)][0].$3"; }
setq() { "$O2CTL" --rundir "$RUN" quota "$MNT" set "$@"; }
# unmounted: fsd exited 0 and its log (each mount writes it anew) reports no sanitizer error
unmounted() {
	fsd_umount "$MNT" && ! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' "$MNT.log"
}

# offline IMG user|group ID: "space inodes" of ID in the global file, read
# from the image by a reader of the quota tree of its own (fs/quota/quota_tree.c's
# layout: header and info in block 0, the tree from block 1, 88-byte entries).
offline() {
	local name=aquota.user out=$D/dump.$$
	[[ $2 == group ]] && name=aquota.group
	debugfs.ocfs2 -R "dump //$name $out" "$1" >/dev/null 2>&1 || return 1
	python3 - "$out" "$(dbg_bs "$1")" "$3" <<'EOF'
import struct, sys
data, bs, want = open(sys.argv[1], 'rb').read(), int(sys.argv[2]), int(sys.argv[3])
magic, ver, bgrace, igrace, syncms, blocks, free_blk, free_entry = struct.unpack_from('<8I', data)
if blocks * bs != len(data):
    sys.exit("dqi_blocks %d does not match the file's %d bytes" % (blocks, len(data)))
epb = (bs - 8) // 4
depth, reach = 1, epb
while reach < 1 << 32:
    reach, depth = reach * epb, depth + 1
found = {}
def walk(blk, d, path):
    refs = struct.unpack_from('<%dI' % epb, data, blk * bs)
    for i, r in enumerate(refs):
        if r == 0:
            continue
        if not 1 < r < blocks:
            sys.exit("reference %d out of the file" % r)
        if d + 1 < depth:
            walk(r, d + 1, path * epb + i)
            continue
        ident = path * epb + i
        for k in range((bs - 24) // 88):
            e = data[r * bs + 16 + k * 88:r * bs + 16 + (k + 1) * 88]
            if e != bytes(88) and struct.unpack_from('<I', e)[0] == ident:
                found[ident] = struct.unpack_from('<2I8Q', e)
                break
        else:
            sys.exit("id %d has a leaf but no entry in it" % ident)
walk(1, 0, 0)
e = found.get(want)
print("0 0" if e is None else "%d %d" % (e[7], e[4]))
EOF
	rm -f "$out"
}

echo "-- one node: usage, limits, chown, delete"
check "mkfs --fs-features=usrquota,grpquota" mkfs_img_size "$IMG" 128M -M local -N 2 \
    -b 4096 -C 4096 -J size=8M --fs-feature-level=max-compat --fs-features=usrquota,grpquota
run_check "mounts read-write" fsd_mount "$IMG" "$MNT" --rundir "$RUN"
mkdir "$MNT/a" "$MNT/b"
chown 4001:4001 "$MNT/a"
chown 4002:4002 "$MNT/b"
check "user 4001 writes, makes directories, a symlink and a fifo" as_user 4001 sh -c "
	head -c 300000 /dev/urandom >'$MNT/a/f1' && mkdir -p '$MNT/a/d/e' &&
	head -c 5000 /dev/urandom >'$MNT/a/d/f2' && ln -s f1 '$MNT/a/l' && mkfifo '$MNT/a/p' &&
	for i in 1 2 3 4 5; do echo \$i >'$MNT/a/d/e/s'\$i; done && sync '$MNT/a/f1'"
check_eq "user 4001's usage is du's and find's" "$(du_usage "$MNT/a")" "$(rep user 4001)"
check_eq "group 4001's too" "$(du_usage "$MNT/a")" "$(rep group 4001)"
read -r SPACE INODES <<<"$(rep user 4001)"

check "o2ctl quota set: a block hard limit" setq user 4001 --block-hard $((SPACE + 65536))
check_eq "the limit is reported" "$((SPACE + 65536))" "$(field user 4001 block_hard)"
expect_error "write(2) past the block hard limit: EDQUOT" "Disk quota exceeded" \
    as_user 4001 dd if=/dev/zero of="$MNT/a/direct" bs=128K count=1 oflag=direct status=none
expect_error "fsync of cached writes past it: EDQUOT" "Disk quota exceeded" \
    as_user 4001 dd if=/dev/zero of="$MNT/a/cached" bs=256K count=1 conv=fsync status=none
check "writes within the limit still succeed" as_user 4001 dd if=/dev/zero of="$MNT/a/small" \
    bs=32K count=1 oflag=direct status=none
check_eq "usage stays within the hard limit, still du's" "$(du_usage "$MNT/a")" "$(rep user 4001)"
read -r SPACE INODES <<<"$(rep user 4001)"
((SPACE <= $(field user 4001 block_hard))) && pass "space <= block hard limit" || fail "space over the hard limit"
check "o2ctl quota set: an inode hard limit" setq user 4001 --inode-hard $((INODES + 2))
check_eq "the limit is reported" "$((INODES + 2))" "$(field user 4001 inode_hard)"
check "creates up to the inode hard limit" as_user 4001 sh -c "
	n=$INODES; while [ \$n -lt $(field user 4001 inode_hard) ]; do
		: >'$MNT/a/i'\$n || exit 1; n=\$((n + 1)); done"
expect_error "one create more: EDQUOT" "Disk quota exceeded" as_user 4001 touch "$MNT/a/one-more"
expect_error "mkdir too" "Disk quota exceeded" as_user 4001 mkdir "$MNT/a/dir-more"
check "root is exempt: a 1 MiB file of root's chowned to 4001" sh -c "
	head -c 1048576 /dev/zero >'$MNT/a/from-root' && chown 4001:4001 '$MNT/a/from-root'"
check_eq "chown moved its usage: still du's" "$(du_usage "$MNT/a")" "$(rep user 4001)"
expect_error "4001, over its hard limit now, cannot grow" "Disk quota exceeded" \
    as_user 4001 dd if=/dev/zero of="$MNT/a/small" bs=4K count=1 oflag=direct,append conv=notrunc status=none
rm "$MNT/a/from-root"
check_eq "the delete gave the space back" "$(du_usage "$MNT/a")" "$(rep user 4001)"
B_BEFORE=$(du_usage "$MNT/b")
chown 4002:4002 "$MNT/a/f1"
mv "$MNT/a/f1" "$MNT/b/f1"
check_eq "chown: 4001 loses f1" "$(du_usage "$MNT/a")" "$(rep user 4001)"
check_eq "chown: 4002 gains it" "$(du_usage "$MNT/b")" "$(rep user 4002)"
check_eq "the group usage moved with it" "$(du_usage "$MNT/b")" "$(rep group 4002)"
[[ $B_BEFORE != "$(du_usage "$MNT/b")" ]] && pass "4002's usage changed" || fail "4002's usage did not change"
check "a soft limit below the usage" setq user 4002 --block-soft 4096
GRACE=$(field user 4002 block_grace_end)
((GRACE > $(date +%s) + 600000)) && pass "its grace time runs (7 days from now)" ||
    fail "no grace time running (block_grace_end $GRACE)"
check "within the grace time 4002 still writes" as_user 4002 sh -c "echo more >>'$MNT/b/f1'"
rm -rf "$MNT"/a/* "$MNT"/b/*
check_eq "everything deleted: 4001 holds only its directory" "$(du_usage "$MNT/a")" "$(rep user 4001)"
check_eq "4002 too" "$(du_usage "$MNT/b")" "$(rep user 4002)"
check_eq "back at the soft limit: the grace time is over" "0" "$(field user 4002 block_grace_end)"
expect_error "refused: an unknown quota type" "usage" setq project 1 --block-hard 1
expect_error "refused: a limit without a value" "not a size" setq user 4001 --block-hard lots
check "limits of 0: none" setq user 4001 --block-hard 0 --inode-hard 0
check_eq "none reported" "0 0" "$(field user 4001 block_hard) $(field user 4001 inode_hard)"
check "o2ctl quota grace: 2 s for space over a user's soft limit" \
    "$O2CTL" --rundir "$RUN" quota "$MNT" grace user --block 2
check_eq "the grace time is reported" 2 \
    "$("$O2CTL" --rundir "$RUN" --json quota "$MNT" report | jq .block_grace)"
check "a soft limit at 4001's usage" setq user 4001 --block-soft "$(field user 4001 space)"
check "past it, the first write starts the grace time" as_user 4001 dd if=/dev/zero \
    of="$MNT/a/g" bs=8K count=1 oflag=direct status=none
check "the next one within it is let through" as_user 4001 dd if=/dev/zero of="$MNT/a/g" \
    bs=8K count=1 seek=1 oflag=direct status=none
sleep 2.2
expect_error "once it is over: EDQUOT" "Disk quota exceeded" as_user 4001 dd if=/dev/zero \
    of="$MNT/a/g" bs=8K count=1 seek=2 oflag=direct status=none
check "root, exempt, still writes for 4001" dd if=/dev/zero of="$MNT/a/g" bs=8K count=1 seek=3 \
    oflag=direct conv=notrunc status=none
rm "$MNT/a/g"
check_eq "back at the soft limit: no grace time" 0 "$(field user 4001 block_grace_end)"
check "a write fits again" as_user 4001 sh -c ": >'$MNT/a/g'"
REPORT=$(rep user 4001)
run_check "unmount, no sanitizer error" unmounted
check "fsck clean" fsck_clean "$IMG"
check_eq "the global file on disk says what the report said" "$REPORT" "$(offline "$IMG" user 4001)"

echo "-- fsd killed after fsync'ed work: usage exact after the replay"
run_check "mount" fsd_mount "$IMG" "$MNT" --rundir "$RUN"
check "4001 writes 30 files and deletes 10, each fsync'ed" as_user 4001 /usr/bin/python3 - "$MNT/a" <<'EOF'
import os, sys
for i in range(30):
    fd = os.open(os.path.join(sys.argv[1], "k%d" % i), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, os.urandom(1000 * (i + 1)))
    os.fsync(fd)
    os.close(fd)
for i in range(0, 30, 3):
    os.unlink(os.path.join(sys.argv[1], "k%d" % i))
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.close(fd)
EOF
WANT=$(du_usage "$MNT/a")
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "mount (replaying)" fsd_mount "$IMG" "$MNT" --rundir "$RUN"
check_eq "du after the replay is what was synced" "$WANT" "$(du_usage "$MNT/a")"
check_eq "and so is the usage" "$WANT" "$(rep user 4001)"
run_check "unmount, no sanitizer error" unmounted
check "fsck clean" fsck_clean "$IMG"
check_eq "on disk too" "$WANT" "$(offline "$IMG" user 4001)"

echo "-- max-features: a crashed kernel node's local quota file, POSIX smoke"
MF=$D/maxf.img
check "mkfs --fs-feature-level=max-features" mkfs_img_size "$MF" 128M -M local -N 2 -b 4096 \
    -J size=8M --fs-feature-level=max-features
check "usrquota and grpquota are among its features" sh -c \
    "debugfs.ocfs2 -R stats '$MF' | grep -q 'RO compat:.*usrquota grpquota'"
# local_clean IMG user|group SLOT: OLQF_CLEAN in the slot's local file (dqi_flags, at byte 8)
local_clean() {
	debugfs.ocfs2 -R "dump //aquota.$2:$(printf %04d "$3") $D/local" "$1" >/dev/null 2>&1 &&
	    (($(od -An -tu4 -j 8 -N 4 "$D/local") & 1))
}
# what a kernel node on slot 1 wrote before it crashed: a file of 4005's,
# its usage still in the slot's local files only
head -c 10000 /dev/urandom >"$D/host"
check "build the libocfs2 fixture maker" build_populate
check "a file of 4005's, its usage in slot 1's local files (not clean)" sh -c "
	printf 'file /k $D/host\nattr /k 644 4005 4005 0 0\n' | '$D/populate' '$MF' &&
	cl=\$(debugfs.ocfs2 -R 'stat /k' '$MF' | sed -n 's/.*Clusters: \([0-9]*\).*/\1/p') &&
	printf 'quotadelta user 1 4005 %d 1\nquotadelta group 1 4005 %d 1\n' \$((cl * 4096)) \$((cl * 4096)) |
	    '$D/populate' '$MF'"
local_clean "$MF" user 1 && fail "slot 1's local file is not clean" || pass "slot 1's local file is not clean"
check "fsck clean before" fsck_clean "$MF"
run_check "mounts read-write" fsd_mount "$MF" "$MNT" --rundir "$RUN"
check "the mount moved slot 1's usage to the global files" grep -q \
    'aquota.user:0001: 1 ids. usage a node left unsynced moved' "$MNT.log"
K_USAGE="$(du_usage "$MNT/k" | cut -d' ' -f1) 1"
check_eq "4005's usage is its file's" "$K_USAGE" "$(reported "$MNT" user 4005 --rundir "$RUN")"
check_eq "group 4005's too" "$K_USAGE" "$(reported "$MNT" group 4005 --rundir "$RUN")"
mkdir "$MNT/u"
chown 4004:4004 "$MNT/u"
check "4004: files, appends, truncates, renames, links, xattrs, holes, directories" \
    as_user 4004 sh -c "cd '$MNT/u' && echo tiny >t && head -c 200000 /dev/urandom >big &&
	cat big >>big2 && cat big >>big2 && truncate -s 50000 big2 && truncate -s 1G sparse &&
	dd if=/dev/urandom of=sparse bs=4K count=2 seek=1000 conv=notrunc status=none &&
	fallocate -l 1M falloc && fallocate -p -o 4096 -l 65536 falloc &&
	mv t t2 && ln t2 hard && ln -s big sym && setfattr -n user.k -v \$(head -c 300 /dev/zero | tr '\\0' v) big &&
	mkdir -p x/y/z && for i in \$(seq 1 300); do : >x/y/name-\$i; done && rm x/y/name-1* &&
	rmdir x/y/z && cmp big big2 >/dev/null 2>&1; [ \$? -eq 1 ] && test \"\$(cat t2)\" = tiny"
check_eq "4004's usage is du's" "$(du_usage "$MNT/u")" "$(reported "$MNT" user 4004 --rundir "$RUN")"
check "4004 reflinks a file (refcount) and writes into the copy" as_user 4004 sh -c "
	'$O2CTL' reflink '$MNT/u/big' '$MNT/u/shared' &&
	dd if=/dev/zero of='$MNT/u/shared' bs=4K count=3 seek=5 conv=notrunc,fsync status=none"
check_eq "shared clusters count in each file, as fsck counts them" "$(du_usage "$MNT/u")" \
    "$(reported "$MNT" user 4004 --rundir "$RUN")"
rm "$MNT/u/big"
check_eq "the original deleted: the copy keeps its clusters" "$(du_usage "$MNT/u")" \
    "$(reported "$MNT" user 4004 --rundir "$RUN")"
run_check "unmount, no sanitizer error" unmounted
check "fsck clean" fsck_clean "$MF"
local_clean "$MF" user 1 && local_clean "$MF" group 1 && pass "slot 1's local files are clean again" ||
    fail "slot 1's local files are not clean"
check_eq "the global file kept 4005's usage" "$K_USAGE" "$(offline "$MF" user 4005)"

echo "-- corrupt quota blocks: EIO, the block named, never a crash"
QI=$D/corrupt.img
check "mkfs --fs-features=metaecc,usrquota,grpquota" mkfs_img_size "$QI" 64M -M local -N 1 \
    -b 4096 -C 4096 -J size=4M --fs-feature-level=max-compat --fs-features=metaecc,usrquota,grpquota
qblock() { debugfs.ocfs2 -R "bmap //aquota.user $2" "$1" 2>/dev/null | tr -d '[:space:]'; }
LEAF=$(qblock "$QI" 5)
HDR=$(qblock "$QI" 0)
poke "$QI" "$LEAF" $((0x30)) ff	# 8 bits of the root's entry: beyond metaecc's repair
run_check "mounts (the header is sound)" fsd_mount "$QI" "$MNT"
expect_error "a create whose usage goes to the corrupt leaf: EIO" "Input/output error" touch "$MNT/x"
check "the log names the block" grep -q "corrupt metadata at block $LEAF" "$MNT.log"
expect_error "then the volume takes no more changes" "Read-only file system" touch "$MNT/y"
check "fsd is alive" kill -0 "$FSD_PID"
run_check "unmount" fsd_umount "$MNT"
poke "$QI" "$HDR" 0 00
mkdir "$D/m2"
FSD_MOUNTS+=("$D/m2")	# should fsd mount it after all, the cleanup unmounts it
expect_error "a corrupt header: the mount is refused, the file named" "aquota.user (inode" \
    timeout 10 "$FSD" -o nocluster "$QI" "$D/m2"
check "its block named too" sh -c "timeout 10 '$FSD' -o nocluster '$QI' '$D/m2' 2>&1 |
    grep -q 'block $HDR'"

echo "-- two nodes write as one uid at once"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
CIMG=$D/cluster.img
check "mkfs (cluster, usrquota,grpquota)" mkfs_img_size "$CIMG" 128M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C 4096 -J size=8M --fs-feature-level=max-compat \
    --fs-features=usrquota,grpquota
if ! lc up 2 --image "$CIMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k"; done
mkdir "${M[1]}/c"
chown 4003:4003 "${M[1]}/c"
for k in 1 2; do
	as_user 4003 sh -c "for i in \$(seq 1 40); do head -c \$((i * 3000)) /dev/zero >'${M[$k]}/c/n$k-'\$i; done;
		rm '${M[$k]}'/c/n$k-1?" &
	PID[$k]=$!
done
for k in 1 2; do run_check "node$k's writer ends" wait "${PID[$k]}"; done
WANT=$(du_usage "${M[1]}/c")
check_eq "node2 sees what node1 sees" "$WANT" "$(du_usage "${M[2]}/c")"
check_eq "node1's report: the sum of both nodes' work" "$WANT" "$(reported "${M[1]}" user 4003 --rundir "$(lc rundir 1)")"
read -r SPACE INODES <<<"$WANT"
check "node1 sets a block hard limit just above it" "$O2CTL" --rundir "$(lc rundir 1)" quota "${M[1]}" \
    set user 4003 --block-hard $((SPACE + 8192))
expect_error "node2 enforces it: EDQUOT" "Disk quota exceeded" \
    as_user 4003 dd if=/dev/zero of="${M[2]}/c/over" bs=64K count=1 oflag=direct status=none
check "node2 writes what fits" as_user 4003 dd if=/dev/zero of="${M[2]}/c/fits" bs=8K count=1 \
    oflag=direct status=none
# node2 dies holding an unlinked file open: node1 replays its journal
# and, once nobody has it open, deletes the orphan
check "node1 lifts the limit" "$O2CTL" --rundir "$(lc rundir 1)" quota "${M[1]}" set user 4003 \
    --block-hard 0
# setpriv execs python: $! is the holder itself, which the kill below ends
setpriv --reuid=4003 --regid=4003 --clear-groups /usr/bin/python3 -c "
import os, sys, time
fd = os.open('${M[2]}/c/doomed', os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'd' * 300000)
os.fsync(fd)
os.unlink('${M[2]}/c/doomed')
print('held', flush=True)
time.sleep(60)" >"$D/holder.out" 2>&1 &
HOLDER=$!
check "node2 holds an unlinked file of 4003's open" wait_for 10 grep -q held "$D/holder.out"
lc kill 2 >/dev/null
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
check "node1 recovers node2's slot" wait_for 20 sh -c \
    "grep -q 'slot 1 recovered' '$LOCALCLUSTER_DIR/node1/log/fsd.log'"
check "node1 writes as 4003 after" as_user 4003 dd if=/dev/zero of="${M[1]}/c/after" bs=4K count=1 \
    oflag=direct status=none
WANT=$(du_usage "${M[1]}/c")
check_eq "node1's report equals du: the orphan's usage is gone with it" "$WANT" \
    "$(reported "${M[1]}" user 4003 --rundir "$(lc rundir 1)")"
check "node1 unmounts" lc umount 1
lc umount 2 >/dev/null 2>&1
check_eq "the global file holds the sum" "$WANT" "$(offline "$CIMG" user 4003)"
check_eq "the group file too" "$WANT" "$(offline "$CIMG" group 4003)"
check "fsck clean" fsck_clean "$CIMG"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"
finish
