#!/usr/bin/env bash
# The project's POSIX checks (tests/progs/posixcheck.c) on a plain FUSE
# passthrough, Debian's fuse-overlayfs, and on fsd: alone over a fresh
# mkfs.ocfs2 image of the default feature level, and as node1 of a
# two-node local cluster with a max-features volume mounted on both nodes. Every check the passthrough passes must
# pass on both fsd mounts; checks the passthrough fails too are listed,
# not required, and so are checks fsd skips because it refuses the
# feature with EOPNOTSUPP (xattrs on a volume made without them). Both
# volumes are clean for fsck.ocfs2 at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

D=$FSD_DIR
PC=$BUILD/progs/posixcheck
M=()
NCHECKS=$("$PC" --list | wc -l)

# run_suite DIR OUT: posixcheck in a fresh directory under DIR, its lines in OUT.
# Run from / so that no check's relative path leaves the mount.
run_suite() {
	mkdir -p "$1/posix" && (cd / && "$PC" "$1/posix" >"$2" 2>&1)
	tail -n 1 "$2"
}

# complete OUT: one verdict per check and the summary line.
complete() {
	[[ $(grep -cE '^(ok|FAIL|skip) ' "$1") -eq $NCHECKS ]] && grep -q '^posixcheck: ' "$1"
}

# compare LABEL OUT: each check ok on the passthrough is ok in OUT. Shows
# what differs; a skip (the feature refused) is shown, not counted.
compare() {
	local label=$1 out=$2 name line bad=0
	while read -r name; do
		line=$(grep -E "^(ok|FAIL|skip) $name(:|\$)" "$out")
		case $line in
		"ok $name") ;;
		skip*) echo "    $label refuses a feature the passthrough has: $line" ;;
		*) echo "    passes on the passthrough, not on $label: ${line:-no verdict for $name}"; bad=1 ;;
		esac
	done < <(sed -n 's/^ok //p' "$D/ovl.out")
	return $bad
}

echo "-- (a) fuse-overlayfs, a plain FUSE passthrough"
mkdir -p "$D/ovl/lower" "$D/ovl/upper" "$D/ovl/work" "$D/ovl/m"
FSD_MOUNTS+=("$D/ovl/m")
check "fuse-overlayfs mounts" fuse-overlayfs -o "lowerdir=$D/ovl/lower,upperdir=$D/ovl/upper,workdir=$D/ovl/work,allow_other,default_permissions" "$D/ovl/m"
run_suite "$D/ovl/m" "$D/ovl.out"
check "posixcheck gave every check a verdict on the passthrough" complete "$D/ovl.out"
fusermount3 -u "$D/ovl/m"

echo "-- (b) fsd on one node, mkfs.ocfs2's default feature level"
IMG=$D/v.img
check "mkfs" mkfs_img "$IMG" -M local -b 4096 -C 4096
run_check "fsd mounts" fsd_mount "$IMG" "$D/mnt"
run_suite "$D/mnt" "$D/local.out"
check "posixcheck gave every check a verdict on fsd" complete "$D/local.out"
check "every check the passthrough passes passes on fsd" compare "fsd" "$D/local.out"
run_check "fsd unmounts" fsd_umount "$D/mnt"
check "fsck.ocfs2 finds the volume clean" fsck_clean "$IMG"

echo "-- (c) fsd as node1 of a two-node cluster, max-features (metaecc, quotas...)"
CIMG=$D/shared.img
check "mkfs (cluster)" mkfs_img "$CIMG" --cluster-stack=o2cb --cluster-name=lc -N 2 \
    -J size=8M --fs-feature-level=max-features -b 4096 -C 4096
if lc up 2 --image "$CIMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	pass "localcluster up 2"
	for k in 1 2; do run_check "node$k mounts the volume" node_mount "$k"; done
	run_suite "${M[1]}" "$D/cluster.out"
	check "posixcheck gave every check a verdict on node1" complete "$D/cluster.out"
	check "every check the passthrough passes passes on node1" compare "node1" "$D/cluster.out"
	check "node2 sees node1's tree" test -d "${M[2]}/posix/readdir_1000/d"
	for k in 2 1; do check "node$k unmounts" lc umount "$k"; done
	check "fsck.ocfs2 finds the cluster volume clean" fsck_clean "$CIMG"
else
	fail "localcluster up 2"
fi

echo "-- summary ($NCHECKS checks)"
for f in ovl local cluster; do
	[[ -f $D/$f.out ]] && printf '  %-8s %s\n' "$f" "$(tail -n 1 "$D/$f.out")"
done
echo "  failing on the passthrough too (not required):"
grep '^FAIL ' "$D/ovl.out" | sed 's/^/    /'
for f in local cluster; do
	[[ -f $D/$f.out ]] || continue
	echo "  failing on fsd ($f):"
	grep '^FAIL ' "$D/$f.out" | sed 's/^/    /'
	echo "  refused by fsd ($f), passing on the passthrough:"
	grep '^skip ' "$D/$f.out" | while read -r _ name why; do
		grep -qx "ok ${name%:}" "$D/ovl.out" && echo "    ${name%:} $why"
	done
done
finish
