#!/usr/bin/env bash
# The Debian package: dpkg-buildpackage builds it from a copy of the tree
# without running the tests; it holds exactly what `make install
# PREFIX=/usr` installs (man pages compressed, Debian's changelog and
# copyright added), hardened binaries, units and a mount helper that run
# /usr/sbin; installing it starts nothing; lintian finds no warning.
source "$(dirname "$0")/../lib.sh"

# Under `make check`, make's variables (BUILD=, -j, the jobserver) would
# reach the package's own make through the environment.
unset MAKEFLAGS MFLAGS MAKELEVEL
WORK=/tmp/ocfs2-test-debian-$$
SRC=$WORK/ocfs2-userspace
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$SRC" "$WORK/x" "$WORK/ctl"

# The tree as git sees it (tracked and untracked, not ignored build dirs).
copy_tree() {
	(cd "$TOP" && git ls-files -co --exclude-standard -z |
		tar --null --ignore-failed-read -cf - -T -) | tar -xf - -C "$SRC"
}
build() { (cd "$SRC" && DEB_BUILD_OPTIONS=parallel=$(nproc) dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log"; return 1; }; }

check "copy the tree" copy_tree
check "its build dependencies are installed (scripts/install-deps)" sh -c "cd '$SRC' && dpkg-checkbuilddeps"
check "dpkg-buildpackage -us -uc -b builds it" build
DEB=$WORK/ocfs2-userspace_$(cd "$SRC" && dpkg-parsechangelog -S Version)_$(dpkg --print-architecture).deb
check "the .deb is there" test -f "$DEB"
# dh_auto_test would run the Makefile's check target.
check "the build ran no test" sh -c "! grep -qE 'make .*check' '$WORK/build.log'"

# What make install puts where, as the package should have it (from the
# copy's build, which dpkg-buildpackage left: nothing is rebuilt).
expected() {
	make -s -C "$SRC" install PREFIX=/usr UNITDIR=/lib/systemd/system \
		DESTDIR="$WORK/inst" >/dev/null || return 1
	(cd "$WORK/inst" && find . ! -type d) | sed -E 's|^(\./usr/share/man/.*)$|\1.gz|'
	printf '%s\n' ./usr/share/doc/ocfs2-userspace/changelog.gz ./usr/share/doc/ocfs2-userspace/copyright
}
packaged() { dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { print $6 }'; }
check "it holds exactly what make install PREFIX=/usr installs" \
    diff <(expected | sort) <(packaged | sort)

dpkg-deb -x "$DEB" "$WORK/x" 2>/dev/null
dpkg-deb -e "$DEB" "$WORK/ctl" 2>/dev/null
# dpkg-buildflags' LDFLAGS reached every link.
hardened() {
	local f bad=0
	for f in "$WORK"/x/usr/sbin/*; do
		readelf -h "$f" >/dev/null 2>&1 || continue	# not ELF (a script)
		if ! readelf -lW "$f" | grep -q GNU_RELRO || ! readelf -dW "$f" | grep -q BIND_NOW; then
			echo "${f##*/}: not linked with -z relro -z now"
			bad=1
		fi
	done
	((bad == 0))
}
check "every program is linked with RELRO and BIND_NOW" hardened
check "the units run the daemons from /usr/sbin" \
    grep -qx 'ExecStart=/usr/sbin/nmd' "$WORK/x/lib/systemd/system/ocfs2-nmd.service"
check "ocfs2.target requires every service" \
    test "$(cd "$WORK/x/lib/systemd/system/ocfs2.target.requires" && echo *)" = \
    "ocfs2-dlmd.service ocfs2-dlmfs.service ocfs2-hbd.service ocfs2-netd.service ocfs2-nmd.service ocfs2-pcmkd.service"
check "the mount helper runs /usr/sbin/fsd" grep -q 'FSD:-/usr/sbin/fsd}' "$WORK/x/usr/sbin/mount.fuse.fsd"
check "it depends on fuse3 and the libraries it links" sh -c \
    "dpkg-deb -f '$DEB' Depends | grep -q 'fuse3,' && dpkg-deb -f '$DEB' Depends | grep -q libfuse3-3"
# No cluster.conf yet at install time: nothing is started, and only an
# upgrade re-enables what the admin had enabled.
check "installing it starts nothing" sh -c "! grep -q deb-systemd-invoke '$WORK/ctl/postinst'"
check "nor enables anything" grep -q "deb-systemd-helper debian-installed 'ocfs2.target'" "$WORK/ctl/postinst"
check "lintian finds no error or warning" lintian --fail-on error,warning "$WORK"/ocfs2-userspace_*.changes
finish
