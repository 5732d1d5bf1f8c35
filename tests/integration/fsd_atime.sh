#!/usr/bin/env bash
# fsd access times: relatime by default (a read moves atime once after
# each change, then leaves it), noatime, strictatime with ocfs2's
# atime_quantum, readdir as well as read, nothing on a read-only mount;
# utimensat with UTIME_NOW and UTIME_OMIT; the atime fsd shows is the
# one on disk (debugfs.ocfs2), and fsck.ocfs2 -fn stays clean.
# Reads use O_DIRECT so that each one reaches fsd past the page cache.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
OLD='2001-02-03 04:05:06.123456789'
OLDER='2000-01-01 00:00:00'

atime() { stat -c %x "$1"; }
atime_s() { stat -c %X "$1"; }
mtime() { stat -c %y "$1"; }
rd() { dd if="$1" of=/dev/null bs=4096 iflag=direct status=none; }
# is atime of $1 at or after $2 (seconds since the epoch)?
fresh() { [[ $(atime_s "$1") -ge $2 ]]; }

check "mkfs" mkfs_img "$D/v.img" -M local --fs-feature-level=max-compat -b 4096 -C 4096

echo "-- relatime (the default)"
run_check "mount" fsd_mount "$D/v.img" "$MNT"
head -c 10000 /dev/urandom >"$MNT/f"
mkdir "$MNT/d"
touch "$MNT/d/entry"
check "atime before mtime" touch -a -d "$OLD" "$MNT/f"
T0=$(date +%s)
check "read" rd "$MNT/f"
check "the read moved atime to now" fresh "$MNT/f" "$T0"
A1=$(atime "$MNT/f")
sleep 1.1
check "read again" rd "$MNT/f"
check_eq "a second read leaves it (atime after mtime, under a day)" "$A1" "$(atime "$MNT/f")"
check "a write" dd if=/dev/zero of="$MNT/f" bs=1 count=1 seek=5 conv=notrunc status=none
check "fsync" sync "$MNT/f"
T0=$(date +%s)
sleep 1.1
check "read after the write" rd "$MNT/f"
check "moved atime again" fresh "$MNT/f" "$((T0 + 1))"
check "dir atime back" touch -a -d "$OLD" "$MNT/d"
T0=$(date +%s)
check "readdir" ls "$MNT/d"
check "readdir moved the dir's atime" fresh "$MNT/d" "$T0"

echo "-- utimensat: UTIME_NOW and UTIME_OMIT"
check "set both" touch -d "$OLD" "$MNT/f"
M=$(mtime "$MNT/f")
T0=$(date +%s)
check "atime now, mtime omitted" touch -a "$MNT/f"
check_eq "mtime kept" "$M" "$(mtime "$MNT/f")"
check "atime is now" fresh "$MNT/f" "$T0"
A=$(atime "$MNT/f")
check "mtime set, atime omitted" touch -m -d "$OLDER" "$MNT/f"
check_eq "atime kept" "$A" "$(atime "$MNT/f")"
check_eq "mtime set" "2000-01-01 00:00:00.000000000" "$(mtime "$MNT/f" | cut -c1-29)"
check "atime back for the unmount" touch -a -d "$OLD" "$MNT/f"
check "read once more" rd "$MNT/f"
A=$(atime_s "$MNT/f")
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"
check_eq "debugfs sees the atime fsd showed" "$A" \
    "$(debugfs.ocfs2 -R 'stat /f' "$D/v.img" 2>/dev/null | sed -n 's/^[[:space:]]*atime: 0x\([0-9a-f]*\).*/\1/p' |
    { read -r h; echo $((16#$h)); })"

echo "-- noatime"
run_check "mount noatime" fsd_mount "$D/v.img" "$MNT" -o noatime
check "atime before mtime" touch -a -d "$OLD" "$MNT/f" "$MNT/d"
check "read" rd "$MNT/f"
check "readdir" ls "$MNT/d"
check_eq "file atime untouched" "$OLD" "$(atime "$MNT/f" | cut -c1-29)"
check_eq "dir atime untouched" "$OLD" "$(atime "$MNT/d" | cut -c1-29)"
run_check "unmount" fsd_umount "$MNT"

echo "-- strictatime"
run_check "mount strictatime" fsd_mount "$D/v.img" "$MNT" -o strictatime
check "mtime long ago" touch -m -d "$OLDER" "$MNT/f"
check "atime 30 s ago, after mtime" touch -a -d @$(($(date +%s) - 30)) "$MNT/f"
A=$(atime "$MNT/f")
check "read" rd "$MNT/f"
check_eq "inside the 60 s quantum: kept (relatime would not: ctime is newer)" "$A" "$(atime "$MNT/f")"
check "atime 90 s ago" touch -a -d @$(($(date +%s) - 90)) "$MNT/f"
T0=$(date +%s)
check "read" rd "$MNT/f"
check "past the quantum: now" fresh "$MNT/f" "$T0"
run_check "unmount" fsd_umount "$MNT"
run_check "mount strictatime,atime_quantum=0" fsd_mount "$D/v.img" "$MNT" -o strictatime,atime_quantum=0
check "read" rd "$MNT/f"
A=$(atime "$MNT/f")
sleep 1.1
check "read a second later" rd "$MNT/f"
check "every read moves it" test "$A" != "$(atime "$MNT/f")"
expect_error "a bad quantum is refused" "bad atime_quantum" "$FSD" -o atime_quantum=x "$D/v.img" "$MNT"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"

echo "-- read-only"
run_check "mount ro" fsd_mount "$D/v.img" "$MNT" -o ro
A=$(atime "$MNT/f")
sleep 1.1
check "read" rd "$MNT/f"
check_eq "atime untouched" "$A" "$(atime "$MNT/f")"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"

finish
