#!/usr/bin/env bash
# An fsx-style exerciser: random writes (any offset and length, also far
# past the end), truncates down and up, reads, fsyncs, and close/reopen
# on one file per seed, each checked against an in-memory model of the
# contents; the volume is remounted and every file checked again, then
# fsck.ocfs2 -fn. Fixed seeds in CI; FSD_FSX_OPS / FSD_FSX_SEEDS make it
# longer (a soak).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
OPS=${FSD_FSX_OPS:-1500}
SEEDS=${FSD_FSX_SEEDS:-"1 2 3 4"}

# fsx PATH SEED OPS MODEL: exercise PATH, leave the model's bytes in MODEL.
# Perl is Essential in Debian; the model is a string.
fsx() {
	perl -e '
		use strict; use warnings; use Fcntl;
		my ($path, $seed, $ops, $modelout) = @ARGV;
		srand($seed);
		my $max = 3 * 1024 * 1024;	# file sizes up to 3 MiB
		my $model = "";
		sysopen(my $fh, $path, O_RDWR | O_CREAT | O_TRUNC) or die "open: $!";
		sub check {
			my ($fh, $off, $len, $what) = @_;
			my $want = $off < length($model) ? substr($model, $off, $len) : "";
			sysseek($fh, $off, 0) or die "seek: $!";
			my $got = "";
			my $n = sysread($fh, $got, $len);
			defined $n or die "read: $!";
			if ($got ne $want) {
				my $i = 0;
				$i++ while $i < length($got) && $i < length($want) &&
				    substr($got, $i, 1) eq substr($want, $i, 1);
				die sprintf("%s: mismatch at byte %d (read %d of %d bytes at %d, size %d)\n",
				    $what, $off + $i, length($got), length($want), $off, length($model));
			}
		}
		for my $op (1 .. $ops) {
			my $r = rand();
			my $size = length($model);
			if ($r < 0.40) {		# write: usually near the data, sometimes far past it
				my $off = int(rand($size + ($r < 0.05 ? $max / 2 : 70000)));
				my $len = 1 + int(rand(rand() < 0.8 ? 9000 : 300000));
				$off = $max - $len if $off + $len > $max;
				my $data = join("", map { chr(int(rand(256))) } 1 .. ($len < 64 ? $len : 64));
				$data = substr($data x (int($len / length($data)) + 1), 0, $len);
				sysseek($fh, $off, 0) or die;
				syswrite($fh, $data) == $len or die "write: $!";
				$model .= "\0" x ($off - length($model)) if $off > length($model);
				substr($model, $off, $len) = $data;
			} elsif ($r < 0.55) {		# truncate down or up
				my $new = int(rand($r < 0.50 ? $size + 1 : $max / 3));
				truncate($fh, $new) or die "truncate: $!";
				if ($new < length($model)) { $model = substr($model, 0, $new); }
				else { $model .= "\0" x ($new - length($model)); }
			} elsif ($r < 0.85) {		# read a range
				my $off = int(rand($size + 5000));
				check($fh, $off, 1 + int(rand(100000)), "op $op read");
			} elsif ($r < 0.90) {
				close($fh);
				sysopen($fh, $path, O_RDWR) or die "reopen: $!";
			} elsif ($r < 0.93) {
				$fh->flush; 
				IO::Handle::sync($fh) or die "fsync: $!" if IO::Handle->can("sync");
			} else {
				my @st = stat($fh);
				$st[7] == length($model) or die "op $op: size $st[7], model " . length($model) . "\n";
			}
		}
		check($fh, 0, length($model) + 1, "final");
		close($fh);
		open(my $mo, ">", $modelout) or die; binmode $mo; print $mo $model; close($mo);
	' "$@"
}

check "mkfs (1K blocks, 4K clusters: many extents)" mkfs_img "$D/v.img" -M local \
    --fs-feature-level=max-compat -b 1024 -C 4096
run_check "mount" fsd_mount "$D/v.img" "$MNT"
for s in $SEEDS; do
	check "seed $s: $OPS operations match the model" fsx "$MNT/f$s" "$s" "$OPS" "$D/model$s"
done
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"
run_check "mount again" fsd_mount "$D/v.img" "$MNT"
for s in $SEEDS; do
	check "seed $s: contents after remount" cmp "$MNT/f$s" "$D/model$s"
	debugfs.ocfs2 -R "cat /f$s" "$D/v.img" >"$D/dbg" 2>/dev/null
done
run_check "unmount" fsd_umount "$MNT"
for s in $SEEDS; do
	debugfs.ocfs2 -R "cat /f$s" "$D/v.img" >"$D/dbg" 2>/dev/null
	check "seed $s: debugfs reads the same bytes" cmp "$D/dbg" "$D/model$s"
done

finish
