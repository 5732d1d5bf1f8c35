#!/usr/bin/env bash
# Extended attributes (mkfs.ocfs2 --fs-feature-level=max-compat
# --fs-features=xattr,sparse,unwritten,inline-data).
#
# One node, 1K blocks (a bucket is four blocks): user., trusted. and
# security. attributes set, read, listed and removed with setfattr and
# getfattr; values of 0, 80 and 81 bytes (the inline value limit) and of
# 64 KiB (a value tree); the errors (ENODATA, EEXIST, EOPNOTSUPP for an
# unknown prefix, E2BIG, ERANGE); a file with hundreds of attributes that
# go inline, then to its xattr block, then into buckets, a third removed
# and some replaced, compared with a model after a remount;
# debugfs.ocfs2 counting the same attributes and showing the buckets;
# files carrying each form deleted. 4K blocks: inline data next to inline
# xattrs, growing past the smaller area; an extent tree growing beside
# them and the file made inline again; a bucket tree of two runs, as the
# kernel grows them, read and rewritten; an inline directory's attribute
# goes to a block (the kernel's rule) and survives its expansion. A
# damaged xattr block (signature, header) or bucket is EIO with the block
# named. POSIX ACLs: enforced for another uid, the mask following chmod,
# default ACLs inherited by files and directories (the umask only without
# one), an ACL equal to the mode kept as the mode, kept across a remount,
# refused on a noacl mount. fsd killed after fsync, and during fsync'ed
# sets: every fsync'ed attribute there after the replay. Two nodes see
# each other's attributes and ACLs. fsck.ocfs2 -fn clean after each part.
# make soak runs the many-attributes part with FSD_XATTR_ATTRS on each of
# FSD_XATTR_GEOMETRIES (blocks:clusters).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

ATTRS=${FSD_XATTR_ATTRS:-250}
GEOMETRIES=${FSD_XATTR_GEOMETRIES:-}

D=$FSD_DIR
MNT=$D/mnt
MODEL=$D/model.json
FEATURES=(--fs-feature-level=max-compat --fs-features=xattr,sparse,unwritten,inline-data)

# model CMD FILE...: python's view of the attributes, against the model in MODEL.
#   fill FILE N: N attributes of assorted sizes, then removes and replaces, into the model
#   verify FILE: the file's names and values are exactly the model's
model() {
	python3 - "$MODEL" "$@" <<'EOF'
import json, os, random, sys
model_path, cmd, f = sys.argv[1:4]
if cmd == 'fill':
    random.seed(7)
    m = {}
    for i in range(int(sys.argv[4])):
        n = 'user.attr-%05d' % i
        v = os.urandom(random.choice([0, 3, 40, 80, 81, 200, 1500]))
        os.setxattr(f, n, v)
        m[n] = v.hex()
    for n in sorted(m)[::3]:
        os.removexattr(f, n)
        del m[n]
    for n in sorted(m)[::7]:
        v = os.urandom(random.choice([1, 90, 700]))
        os.setxattr(f, n, v)
        m[n] = v.hex()
    json.dump(m, open(model_path, 'w'))
elif cmd == 'verify':
    m = json.load(open(model_path))
    names = set(os.listxattr(f))
    if names != set(m):
        sys.exit('names differ: %d listed, %d in the model' % (len(names), len(m)))
    for n, v in m.items():
        if os.getxattr(f, n).hex() != v:
            sys.exit('value of %s differs' % n)
EOF
}

# py_errno CODE: run python CODE (os imported, f = $MNT/f); print the errno name it raises.
py_errno() {
	python3 -c "
import errno, os
f = '$MNT/f'
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])"
}

# dbg_xattrs IMG PATH: the total debugfs.ocfs2 counts for PATH.
dbg_xattrs() {
	debugfs.ocfs2 -R "xattr $2" "$1" 2>/dev/null | sed -n 's/.*Extended attributes in total: \([0-9]*\).*/\1/p'
}

# dyn_names IMG PATH: the inode's dynamic features by name, as debugfs.ocfs2 prints them.
dyn_names() {
	debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Dynamic Features: ([^)]*) *//p' | xargs
}

echo "-- one node, 1K blocks"
IMG=$D/xattr1k.img
check "mkfs (1K blocks, xattr)" mkfs_img "$IMG" -b 1024 -C 4096 "${FEATURES[@]}"
run_check "mount" fsd_mount "$IMG" "$MNT"
head -c 65536 /dev/urandom >"$D/big"
head -c 81 /dev/urandom >"$D/v81"
echo hello >"$MNT/f"
check "set user., trusted., security." sh -c "setfattr -n user.small -v hello '$MNT/f' &&
    setfattr -n trusted.t -v 0x0102 '$MNT/f' && setfattr -n security.s -v sec '$MNT/f'"
check_eq "get them back" "hello 0x0102 sec" \
    "$(getfattr --only-values -n user.small "$MNT/f") $(getfattr -e hex -n trusted.t "$MNT/f" 2>/dev/null | sed -n 's/^trusted.t=//p') $(getfattr --only-values -n security.s "$MNT/f")"
check_eq "list them" "security.s trusted.t user.small" \
    "$(getfattr -m - -d --absolute-names "$MNT/f" | sed -n 's/=.*//p' | sort | xargs)"
check "an empty value" sh -c "setfattr -n user.empty '$MNT/f' && getfattr -n user.empty '$MNT/f'"
check "80 bytes stay next to the name, 81 go to a cluster, 64 KiB to a value tree" sh -c "
    setfattr -n user.v80 -v 0x$(head -c 80 /dev/zero | tr '\0' 'A' | xxd -p | tr -d '\n') '$MNT/f' &&
    setfattr -n user.v81 -v 0x$(xxd -p "$D/v81" | tr -d '\n') '$MNT/f' &&
    python3 -c \"import os; os.setxattr('$MNT/f', 'user.big', open('$D/big','rb').read())\""
check "the 81-byte and 64 KiB values read back" python3 -c "
import os
assert os.getxattr('$MNT/f', 'user.v81') == open('$D/v81', 'rb').read()
assert os.getxattr('$MNT/f', 'user.big') == open('$D/big', 'rb').read()"
check_eq "XATTR_CREATE on an existing name" EEXIST "$(py_errno "os.setxattr(f, 'user.small', b'x', os.XATTR_CREATE)")"
check_eq "XATTR_REPLACE on a missing name" ENODATA "$(py_errno "os.setxattr(f, 'user.none', b'x', os.XATTR_REPLACE)")"
check_eq "get of a missing name" ENODATA "$(py_errno "os.getxattr(f, 'user.none')")"
check_eq "an unknown prefix" ENOTSUP "$(py_errno "os.setxattr(f, 'bogus.x', b'x')")"
check_eq "no ACL on a new file" ENODATA "$(py_errno "os.getxattr(f, 'system.posix_acl_access')")"
check_eq "a value past 64 KiB" E2BIG "$(py_errno "os.setxattr(f, 'user.huge', b'x' * 65537)")"
check_eq "a buffer too small" ERANGE "$(python3 -c "
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(2)
rc = libc.getxattr(b'$MNT/f', b'user.small', buf, 2)
print(errno.errorcode[ctypes.get_errno()] if rc < 0 else rc)")"
check "remove one" setfattr -x user.v80 "$MNT/f"
check_eq "removing it again" ENODATA "$(py_errno "os.removexattr(f, 'user.v80')")"
NF=$(getfattr -m - -d --absolute-names "$MNT/f" | grep -c =)
touch "$MNT/many"
check "$ATTRS attributes: inline, block, buckets; a third removed, some replaced" model fill "$MNT/many" "$ATTRS"
check "they read back as the model says" model verify "$MNT/many"
# forms to delete: only inline; inline and a block with a value tree
touch "$MNT/in" "$MNT/blk"
setfattr -n user.a -v 1 "$MNT/in"
for i in $(seq 1 12); do setfattr -n "user.blk-$i" -v "0x$(head -c 100 /dev/urandom | xxd -p | tr -d '\n')" "$MNT/blk"; done
mkdir "$MNT/dir"
setfattr -n user.d -v "$(head -c 300 /dev/zero | tr '\0' d)" "$MNT/dir"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "debugfs.ocfs2 counts what getfattr listed" "$NF" "$(dbg_xattrs "$IMG" /f)"
check "debugfs.ocfs2 sees buckets" sh -c "debugfs.ocfs2 -R 'xattr /many' '$IMG' | grep -q 'Has buckets'"
check_eq "debugfs.ocfs2 counts the model's attributes" \
    "$(python3 -c "import json; print(len(json.load(open('$MODEL'))))")" "$(dbg_xattrs "$IMG" /many)"
run_check "mount again" fsd_mount "$IMG" "$MNT"
check "after the remount, as the model says" model verify "$MNT/many"
check_eq "a directory's attribute" 300 "$(getfattr --only-values -n user.d "$MNT/dir" | wc -c)"
check "delete files carrying each form" rm "$MNT/many" "$MNT/in" "$MNT/blk" "$MNT/f"
check "rmdir one" rmdir "$MNT/dir"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean after the deletes" fsck_clean "$IMG"

for g in $GEOMETRIES; do
	echo "-- $ATTRS attributes, ${g%%:*}-byte blocks, ${g#*:}-byte clusters"
	IMG=$D/xattrgeo.img
	check "mkfs" mkfs_img_size "$IMG" 1G -b "${g%%:*}" -C "${g#*:}" "${FEATURES[@]}"
	run_check "mount" fsd_mount "$IMG" "$MNT"
	touch "$MNT/many"
	check "set, remove, replace" model fill "$MNT/many" "$ATTRS"
	check "as the model says" model verify "$MNT/many"
	run_check "unmount" fsd_umount "$MNT"
	check "fsck clean" fsck_clean "$IMG"
	run_check "mount again" fsd_mount "$IMG" "$MNT"
	check "after the remount, as the model says" model verify "$MNT/many"
	check "delete it" rm "$MNT/many"
	run_check "unmount" fsd_umount "$MNT"
	check "fsck clean after the delete" fsck_clean "$IMG"
done

echo "-- inline data and inline xattrs share the inode block"
IMG=$D/xattr4k.img
check "mkfs (4K blocks)" mkfs_img "$IMG" -b 4096 -C 4096 "${FEATURES[@]}"
run_check "mount" fsd_mount "$IMG" "$MNT"
head -c 100 /dev/urandom >"$D/d100"
cp "$D/d100" "$MNT/small"
setfattr -n user.x -v inline "$MNT/small"
head -c 3000 /dev/urandom | tee -a "$D/d100" >>"$MNT/small"
check "an inline file with inline xattrs grows past its smaller area" cmp "$MNT/small" "$D/d100"
touch "$MNT/later"
setfattr -n user.first -v 1 "$MNT/later"
head -c 3700 /dev/urandom >"$D/d3700"
cp "$D/d3700" "$MNT/later"
check "a file with inline xattrs written later: 3700 bytes do not fit inline" cmp "$MNT/later" "$D/d3700"
touch "$MNT/sparse"
setfattr -n user.keep -v "$(head -c 150 /dev/zero | tr '\0' k)" "$MNT/sparse"
python3 -c "
import os
fd = os.open('$MNT/sparse', os.O_WRONLY)
for i in range(0, 600, 2):
    os.pwrite(fd, b'x' * 4096, i * 4096)
os.close(fd)"
check_eq "300 extents beside inline xattrs: the tree grows, the attribute stays" 150 \
    "$(getfattr --only-values -n user.keep "$MNT/sparse" | wc -c)"
truncate -s 0 "$MNT/sparse"
echo small >"$MNT/sparse"
check_eq "cut to nothing and written again: inline data beside the attribute" "small 150" \
    "$(cat "$MNT/sparse") $(getfattr --only-values -n user.keep "$MNT/sparse" | wc -c)"
mkdir "$MNT/dir"
setfattr -n user.d -v dirattr "$MNT/dir"
for i in $(seq 1 120); do : >"$MNT/dir/entry-with-a-long-name-$i"; done
check_eq "an inline directory with an attribute expands" "120 dirattr" \
    "$(ls "$MNT/dir" | wc -l) $(getfattr --only-values -n user.d "$MNT/dir")"
touch "$MNT/damaged" "$MNT/damaged2" "$MNT/bucketed"
for i in $(seq 1 30); do
	v=0x$(head -c 60 /dev/urandom | xxd -p | tr -d '\n')
	setfattr -n "user.d-$i" -v "$v" "$MNT/damaged"
	setfattr -n "user.d-$i" -v "$v" "$MNT/damaged2"
done
for i in $(seq 1 80); do setfattr -n "user.b-$i" -v "$(head -c 60 /dev/zero | tr '\0' b)" "$MNT/bucketed"; done
touch "$MNT/badvalue"
setfattr -n user.v -v "$(head -c 200 /dev/zero | tr '\0' v)" "$MNT/badvalue"
touch "$MNT/tworuns" "$MNT/tworuns2"
python3 -c "
import os
for i in range(300):
    for f in ('tworuns', 'tworuns2'):
        os.setxattr('$MNT/' + f, 'user.t-%d' % i, b'%d' % i * (i % 30))"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "debugfs.ocfs2: 3100 bytes inline next to the xattrs, 3700 in a cluster, 6 again inline" \
    "InlineData HasXattr InlineXattr / HasXattr InlineXattr / InlineData HasXattr InlineXattr" \
    "$(dyn_names "$IMG" /small) / $(dyn_names "$IMG" /later) / $(dyn_names "$IMG" /sparse)"

echo "-- a bucket tree of two runs, as the kernel grows one"
# fsd writes one run; the kernel adds runs, each first bucket counting its own buckets
# split_runs IMG XB: the single run of xattr block XB's tree becomes two records
split_runs() {
	python3 - "$1" "$2" <<'EOF'
import struct, sys
img, xb = sys.argv[1], int(sys.argv[2])
bs = 4096        # 4K blocks and clusters: a bucket is a block, a cluster holds one
with open(img, 'r+b') as f:
    f.seek(xb * bs)
    b = bytearray(f.read(bs))
    assert struct.unpack_from('<H', b, 0x20)[0] & 1, 'indexed'
    assert struct.unpack_from('<H', b, 0x44)[0] == 1, 'one record'
    cpos, n, blk = struct.unpack_from('<IHxxQ', b, 0x50)
    assert n >= 4, n
    k = n // 2
    f.seek(blk * bs)
    first = bytearray(f.read(bs))
    f.seek((blk + k) * bs)
    second = bytearray(f.read(bs))
    hash0, = struct.unpack_from('<I', second, 16)
    struct.pack_into('<H', first, 6, k)
    struct.pack_into('<H', second, 6, n - k)
    f.seek(blk * bs); f.write(first)
    f.seek((blk + k) * bs); f.write(second)
    struct.pack_into('<IHxxQ', b, 0x50, 0, k, blk)
    struct.pack_into('<IHxxQ', b, 0x60, hash0, n - k, blk + k)
    struct.pack_into('<H', b, 0x44, 2)
    f.seek(xb * bs)
    f.write(b)
EOF
}
TB=$(debugfs.ocfs2 -R "stat /tworuns" "$IMG" | sed -n 's/.*Extended Attributes Block: \([0-9]*\).*/\1/p')
TB2=$(debugfs.ocfs2 -R "stat /tworuns2" "$IMG" | sed -n 's/.*Extended Attributes Block: \([0-9]*\).*/\1/p')
check "split their runs in two" eval 'split_runs "$IMG" "${TB:-0}" && split_runs "$IMG" "${TB2:-0}"'
check "fsck takes it" fsck_clean "$IMG"
run_check "mount" fsd_mount "$IMG" "$MNT"
check "every attribute is read through both runs" python3 -c "
import os
f = '$MNT/tworuns'
assert len([n for n in os.listxattr(f) if n.startswith('user.t-')]) == 300
for i in range(300):
    assert os.getxattr(f, 'user.t-%d' % i) == b'%d' % i * (i % 30), i"
setfattr -n user.t-new -v new "$MNT/tworuns"
check "deleting the other frees both runs" rm "$MNT/tworuns2"
check_eq "a set after it" "new 301" \
    "$(getfattr --only-values -n user.t-new "$MNT/tworuns") $(getfattr -m - --absolute-names "$MNT/tworuns" 2>/dev/null | grep -c '^user.t-')"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean: the old runs freed" fsck_clean "$IMG"
check "the tree is one run again" sh -c "debugfs.ocfs2 -R 'xattr /tworuns' '$IMG' | grep -q 'Depth: 0  Records: 1'"

echo "-- a damaged xattr block"
XB=$(debugfs.ocfs2 -R "stat /damaged" "$IMG" | sed -n 's/.*Extended Attributes Block: \([0-9]*\).*/\1/p')
check "the attributes went to a block" test "${XB:-0}" -gt 0
poke "$IMG" "${XB:-0}" 0 5858585858585858
run_check "mount" fsd_mount "$IMG" "$MNT"
expect_error "getfattr is EIO" "Input/output error" getfattr -n user.d-30 "$MNT/damaged"
check "the log names the block" grep -q "block $XB: bad signature" "$MNT.log"
check_eq "the other files are fine" dirattr "$(getfattr --only-values -n user.d "$MNT/dir")"
fusermount3 -u "$MNT"
wait "$FSD_PID" 2>/dev/null
XB=$(debugfs.ocfs2 -R "stat /damaged2" "$IMG" | sed -n 's/.*Extended Attributes Block: \([0-9]*\).*/\1/p')
BK=$(debugfs.ocfs2 -R "xattr /bucketed" "$IMG" | sed -n 's/.*extent record start at #\([0-9]*\).*/\1/p' | head -1)
check "the 80 attributes went to buckets" test "${BK:-0}" -gt 0
poke "$IMG" "${XB:-0}" $((0x30)) ffff	# xh_count
poke "$IMG" "${BK:-0}" 0 ff00		# the first bucket's xh_count
# the only inline entry: name "v" at 4096-52, its value root's record's e_blkno the block's last 8 bytes
BV=$(dbg_ino "$IMG" /badvalue)
poke "$IMG" "${BV:-0}" 4088 ffffff0000000000
run_check "mount" fsd_mount "$IMG" "$MNT"
expect_error "a header of impossible entries is EIO" "Input/output error" getfattr -n user.d-30 "$MNT/damaged2"
check "the log names its block" grep -q "block $XB: xattr header of 65535 entries overflows" "$MNT.log"
expect_error "a bucket of impossible entries is EIO" "Input/output error" getfattr -n user.b-40 "$MNT/bucketed"
check "the log names the bucket" grep -q "block $BK: xattr entry" "$MNT.log"
expect_error "a value root pointing outside the volume is EIO" "Input/output error" \
    getfattr -n user.v "$MNT/badvalue"
check "the log names its inode" grep -q "block $BV: extent 0 .* is outside the volume" "$MNT.log"
expect_error "after corruption the mount takes no more changes" "Read-only file system" \
    rm "$MNT/badvalue"
fusermount3 -u "$MNT"
wait "$FSD_PID" 2>/dev/null

echo "-- POSIX ACLs"
IMG=$D/xattracl.img
check "mkfs (4K blocks)" mkfs_img "$IMG" -b 4096 -C 4096 "${FEATURES[@]}"
run_check "mount (acl is the default)" fsd_mount "$IMG" "$MNT" -o allow_other
# as1000 CMD...: CMD as uid and gid 1000, no other groups (the test's directory open to it)
as1000() { setpriv --reuid 1000 --regid 1000 --clear-groups "$@"; }
chmod 755 "$D"
echo secret >"$MNT/s"
chmod 600 "$MNT/s"
expect_error "uid 1000 may not read a 0600 file" "Permission denied" as1000 cat "$MNT/s"
setfacl -m u:1000:r "$MNT/s"
check_eq "an ACL entry lets it read" secret "$(as1000 cat "$MNT/s")"
check_eq "the mode's group bits show the mask" 640 "$(stat -c %a "$MNT/s")"
chmod 600 "$MNT/s"
check_eq "chmod carries into the mask" "mask::---" "$(getfacl -pn "$MNT/s" 2>/dev/null | grep '^mask')"
expect_error "and the entry is no longer effective" "Permission denied" as1000 cat "$MNT/s"
mkdir "$MNT/shared"
setfacl -m u:1000:rwx "$MNT/shared"
setfacl -d -m u:1000:rwx "$MNT/shared"
as1000 sh -c "umask 077; : >'$MNT/shared/mine'; mkdir '$MNT/shared/sub'"
check_eq "a default ACL is inherited, the umask not applied" "664 user:1000:rwx" \
    "$(stat -c %a "$MNT/shared/mine") $(getfacl -pn "$MNT/shared/mine" 2>/dev/null | grep -o '^user:1000:rwx')"
check_eq "a new directory inherits the default too" "default:user:1000:rwx" \
    "$(getfacl -pn "$MNT/shared/sub" 2>/dev/null | grep -o '^default:user:1000:rwx')"
(umask 077; : >"$MNT/plain")
check_eq "without a default ACL the umask applies" 600 "$(stat -c %a "$MNT/plain")"
setfacl -m u::rwx,g::r,o::- "$MNT/plain"
check_eq "an ACL the mode says all of is only the mode" "740 ENODATA" \
    "$(stat -c %a "$MNT/plain") $(py_errno "os.getxattr('$MNT/plain', 'system.posix_acl_access')")"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "debugfs.ocfs2 sees the access ACL (type 2)" 1 \
    "$(debugfs.ocfs2 -R 'xattr -v /s' "$IMG" | grep -c '^[[:space:]]*#0[[:space:]]*2[[:space:]]')"
run_check "mount -o noacl" fsd_mount "$IMG" "$MNT" -o noacl,allow_other
expect_error "noacl: setfacl is refused" "Operation not supported" setfacl -m u:1000:r "$MNT/plain"
check_eq "noacl: ACLs are not listed" "" "$(getfattr -m - --absolute-names "$MNT/s" 2>/dev/null)"
run_check "unmount" fsd_umount "$MNT"
run_check "mount again (acl)" fsd_mount "$IMG" "$MNT" -o allow_other
check_eq "the ACLs are still there" "user:1000:r--" "$(getfacl -pn "$MNT/s" 2>/dev/null | grep -o '^user:1000:r--')"
check "delete files with ACLs" rm -r "$MNT/shared" "$MNT/s"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"

echo "-- fsd killed after fsync"
IMG=$D/xattrcrash.img
check "mkfs" mkfs_img "$IMG" -b 4096 -C 4096 "${FEATURES[@]}"
run_check "mount" fsd_mount "$IMG" "$MNT" -o commit=60
check "set attributes of every form, fsync" python3 -c "
import os
f = '$MNT/c'
open(f, 'w').close()
os.setxattr(f, 'user.small', b's')
os.setxattr(f, 'user.big', b'B' * 5000)
for i in range(60):
    os.setxattr(f, 'user.n%03d' % i, b'v' * 60)
fd = os.open(f, os.O_RDONLY); os.fsync(fd); os.close(fd)"
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "mount (replaying the journal)" fsd_mount "$IMG" "$MNT"
check "every attribute is there" python3 -c "
import os
f = '$MNT/c'
assert os.getxattr(f, 'user.small') == b's'
assert os.getxattr(f, 'user.big') == b'B' * 5000
assert all(os.getxattr(f, 'user.n%03d' % i) == b'v' * 60 for i in range(60))"
# a writer setting attributes through blocks and bucket rebuilds, each fsync'ed, then logged
python3 - "$MNT/w" "$D/synced" <<'EOF' >/dev/null 2>&1 &
import os, sys
f, log = sys.argv[1:3]
open(f, 'w').close()
fd = os.open(f, os.O_RDONLY)
with open(log, 'w') as out:
    for i in range(100000):
        os.setxattr(f, 'user.w%05d' % i, b'%05d' % i * (i % 40))
        os.fsync(fd)
        out.write('%d\n' % i)
        out.flush()
EOF
WR=$!
sleep 1
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
wait "$WR" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "mount after a kill in the middle of sets" fsd_mount "$IMG" "$MNT"
check "every fsync'ed attribute is there ($(wc -l <"$D/synced") of them)" python3 -c "
import os
n = [int(l) for l in open('$D/synced')]
assert len(n) > 20, len(n)
for i in n:
    assert os.getxattr('$MNT/w', 'user.w%05d' % i) == b'%05d' % i * (i % 40), i"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"

echo "-- two nodes"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
IMG=$D/xattrshared.img
check "mkfs (cluster, xattr)" mkfs_img "$IMG" --cluster-stack=o2cb --cluster-name=lc -N 2 \
    -b 4096 -C 4096 -J size=8M "${FEATURES[@]}"
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k" -o allow_other; done
touch "${M[1]}/s"
setfattr -n user.one -v from-node1 "${M[1]}/s"
check_eq "node2 reads node1's attribute" from-node1 "$(getfattr --only-values -n user.one "${M[2]}/s")"
for i in $(seq 1 40); do setfattr -n "user.many-$i" -v "$(head -c 70 /dev/zero | tr '\0' x)" "${M[2]}/s"; done
check_eq "node1 lists node2's 40 more" 41 "$(getfattr -m - -d --absolute-names "${M[1]}/s" | grep -c =)"
setfattr -x user.one "${M[1]}/s"
expect_error "node2 sees node1's removal" "No such attribute" getfattr -n user.one "${M[2]}/s"
rm "${M[2]}/s"
echo shared >"${M[1]}/a"
chmod 600 "${M[1]}/a"
expect_error "uid 1000 may not read it on node2 (its kernel caches no ACL)" "Permission denied" \
    as1000 cat "${M[2]}/a"
setfacl -m u:1000:rw "${M[1]}/a"
check_eq "node1 grants it an ACL entry: node2 lets it read" shared "$(as1000 cat "${M[2]}/a")"
check_eq "node2 lists node1's ACL" "user:1000:rw-" "$(getfacl -pn "${M[2]}/a" 2>/dev/null | grep '^user:1000')"
chmod 604 "${M[2]}/a"
check_eq "node1 sees node2's chmod in the mask" "mask::---" "$(getfacl -pn "${M[1]}/a" 2>/dev/null | grep '^mask')"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"

finish
