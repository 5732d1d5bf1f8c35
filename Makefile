# One non-recursive Makefile: every daemon and tool into $(BUILD).
#   make              build everything into build/
#   make SANITIZE=1   the same with ASan+UBSan, into build/san/
#   make check        unit tests (plain and sanitized), then integration tests
#   make test T=NAME  one test: tests/unit/NAME.c or tests/integration/NAME.sh
#   make bench        benchmarks
#   make soak         long fsx, crash, stress and fault-injection runs on fsd
#                     (needs root and FUSE), then a million executions of each fuzz harness
#   make fuzz         libFuzzer harnesses (clang), into build/fuzz/, run briefly
#   make install      PREFIX=/usr/local DESTDIR= (daemons, o2ctl, systemd units, docs)

PREFIX	?= /usr/local
DESTDIR	?=
BINDIR	 = $(PREFIX)/sbin
UNITDIR	?= $(PREFIX)/lib/systemd/system
DOCDIR	?= $(PREFIX)/share/doc/ocfs2-userspace
MANDIR	?= $(PREFIX)/share/man
# mount(8) looks for mount.fuse.fsd in /sbin, which is /usr/sbin on
# merged-/usr systems (Debian 12 on); installing under /usr keeps a
# DESTDIR image from replacing the /sbin symlink with a directory.
MOUNTDIR ?= /usr/sbin
# pacemaker finds OCF agents under /usr/lib/ocf/resource.d/PROVIDER
# whatever the prefix: ocf:ocfs2:fsd.
OCFDIR	?= /usr/lib/ocf/resource.d/ocfs2

ifeq ($(FUZZ),1)
# The fuzz harnesses (tests/fuzz/) and the libraries they link: clang,
# coverage for libFuzzer in every object, ASan+UBSan. The normal build
# stays gcc. dlmd gives enum dlm_mode to proto's Dlmd__Mode by value,
# which only clang warns about.
BUILD	?= build/fuzz
FUZZ_CC	?= clang-14
CC	 = $(FUZZ_CC)
SANFLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined -Wno-unknown-warning-option -Wno-enum-conversion
else ifeq ($(SANITIZE),1)
# FSD_LOCK_CHECKS: fsd aborts where two open handles change one block
# (fsd/journal.c), instead of waiting and saying so once.
BUILD	?= build/san
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
	   -DFSD_LOCK_CHECKS
else
BUILD	?= build
SANFLAGS =
endif

PKGS	 = libevent libprotobuf-c libsystemd fuse3 libsodium
CC	?= cc
CFLAGS	?= -O2 -g
WARN	 = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wpointer-arith -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation
# CPPFLAGS and LDFLAGS from the environment (dpkg-buildflags' hardening,
# for one) come last.
CPPFLAGS_ALL = -std=gnu11 $(WARN) -Icommon -Io2dlm -I$(BUILD)/proto -D_GNU_SOURCE \
	   $(shell pkg-config --cflags $(PKGS)) $(SANFLAGS) -MMD -MP $(CPPFLAGS)
LDLIBS_ALL = $(shell pkg-config --libs $(PKGS)) $(SANFLAGS) $(LDFLAGS)

DAEMONS	 = $(sort $(patsubst %/main.c,%,$(wildcard nmd/main.c hbd/main.c pcmkd/main.c netd/main.c dlmd/main.c dlmfs/main.c fsd/main.c)))
# pcmkd alone talks to corosync.
COROSYNC_PKGS = libcpg libquorum libcmap libcorosync_common
TOOLS	 = o2ctl o2lock pcmkd-stonith

PROTOS	 = $(wildcard proto/*.proto)
PROTO_C	 = $(PROTOS:proto/%.proto=$(BUILD)/proto/%.pb-c.c)
PROTO_H	 = $(PROTO_C:.c=.h)
OBJ	 = $(BUILD)/obj
COMMON_OBJS = $(patsubst %.c,$(OBJ)/%.o,$(wildcard common/*.c)) $(PROTO_C:.c=.o)
LIBCOMMON = $(BUILD)/libcommon.a

UNIT_SRCS = $(wildcard tests/unit/test_*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

# LD_PRELOAD shims the integration tests inject faults with.
HELPER_SRCS = $(wildcard tests/helpers/*.c)
HELPER_LIBS = $(HELPER_SRCS:tests/helpers/%.c=$(BUILD)/tests/lib%.so)

# Programs the integration tests run as peers and clients (real sockets).
TEST_PROG_SRCS = $(wildcard tests/progs/*.c)
TEST_PROGS = $(TEST_PROG_SRCS:tests/progs/%.c=$(BUILD)/progs/%)

all: $(DAEMONS:%=$(BUILD)/%) $(TOOLS:%=$(BUILD)/%) $(HELPER_LIBS) $(TEST_PROGS) \
    $(BUILD)/mount.fuse.fsd $(BUILD)/ocf/fsd

# protoc-c writes next to its output; generated files are never committed.
$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

# Every object waits for the generated headers.
$(OBJ)/%.o: %.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS) -c -o $@ $<

$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(PROTO_H)
	$(CC) $(CPPFLAGS_ALL) -Wno-missing-prototypes $(CFLAGS) -c -o $@ $<

$(LIBCOMMON): $(COMMON_OBJS)
	@rm -f $@
	ar rcs $@ $^

# A daemon is its directory: main.o plus a library of the rest, which
# unit tests link too.
define daemon_rules
$(1)_OBJS = $$(patsubst %.c,$$(OBJ)/%.o,$$(filter-out $(1)/main.c,$$(wildcard $(1)/*.c)))
$$(BUILD)/lib$(1).a: $$($(1)_OBJS)
	@rm -f $$@
	ar rcs $$@ $$^
$$(BUILD)/$(1): $$(OBJ)/$(1)/main.o $$(BUILD)/lib$(1).a $$(LIBCOMMON)
	$$(CC) $$(CFLAGS) -o $$@ $$^ $$(LDLIBS_ALL)
endef
$(foreach d,$(DAEMONS),$(eval $(call daemon_rules,$(d))))
$(BUILD)/pcmkd: LDLIBS_ALL += $(shell pkg-config --libs $(COROSYNC_PKGS))

# The dlmd client library (o2dlm.h), for fsd, tools and programs.
LIBO2DLM = $(BUILD)/libo2dlm.a
$(LIBO2DLM): $(patsubst %.c,$(OBJ)/%.o,$(wildcard o2dlm/*.c))
	@rm -f $@
	ar rcs $@ $^
# fsd and dlmfs are dlmd clients.
$(BUILD)/fsd $(BUILD)/dlmfs: $(LIBO2DLM)

DAEMON_LIBS = $(DAEMONS:%=$(BUILD)/lib%.a) $(LIBO2DLM)
TOOL_OBJS = $(patsubst %.c,$(OBJ)/%.o,$(wildcard tools/*.c))

# o2ctl keygen writes netd's key format: it links netd's library.
$(BUILD)/o2ctl: $(TOOL_OBJS) $(BUILD)/libnetd.a $(LIBO2DLM) $(LIBCOMMON)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_ALL)

# pcmkd-stonith: pcmkd's fencing program for pacemaker's fencer. The
# stonith API's header loads libstonithd at run time (-ldl): no link to
# pacemaker, which a node fencing with an agent need not have.
$(OBJ)/stonith/main.o: CPPFLAGS_ALL += $(shell pkg-config --cflags-only-I pacemaker-fencing)
$(BUILD)/pcmkd-stonith: $(OBJ)/stonith/main.o
	$(CC) $(CFLAGS) -o $@ $^ $(SANFLAGS) $(LDFLAGS) -ldl

# o2lock: flock(1) across the cluster.
$(BUILD)/o2lock: $(patsubst %.c,$(OBJ)/%.o,$(wildcard o2lock/*.c)) $(LIBO2DLM) $(LIBCOMMON)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/tests/%: tests/unit/%.c $(DAEMON_LIBS) $(LIBCOMMON) | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -I. -Wno-missing-prototypes $(CFLAGS) -o $@ $< \
	    $(DAEMON_LIBS) $(LIBCOMMON) $(LDLIBS_ALL) -lcriterion

$(BUILD)/progs/%: tests/progs/%.c $(DAEMON_LIBS) $(LIBCOMMON) | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -I. -Wno-missing-prototypes $(CFLAGS) -o $@ $< \
	    $(DAEMON_LIBS) $(LIBCOMMON) $(LDLIBS_ALL)

# libFuzzer harnesses: one per input format a daemon takes from outside.
FUZZ_SRCS = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS = $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/%)

# fuzz_<daemon>_<what>.c links that daemon's library (they cannot all be
# linked together: each has its api_start), the others only libcommon.
$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(LIBCOMMON) | $(PROTO_H)
	$(CC) $(CPPFLAGS_ALL) -I. -Wno-missing-prototypes $(CFLAGS) -fsanitize=fuzzer -o $@ $< \
	    $(LIBCOMMON) $(LDLIBS_ALL)
define fuzz_rules
$$(BUILD)/fuzz_$(1)_%: tests/fuzz/fuzz_$(1)_%.c $$(BUILD)/lib$(1).a $$(LIBO2DLM) $$(LIBCOMMON) | $$(PROTO_H)
	$$(CC) $$(CPPFLAGS_ALL) -I. -Wno-missing-prototypes $$(CFLAGS) -fsanitize=fuzzer -o $$@ $$< \
	    $$(BUILD)/lib$(1).a $$(LIBO2DLM) $$(LIBCOMMON) $$(LDLIBS_ALL)
endef
$(foreach d,$(DAEMONS),$(eval $(call fuzz_rules,$(d))))

# Their seeds: messages (seeds.c) and blocks of a new volume (mkfs.ocfs2).
$(BUILD)/fuzz-seeds: tests/fuzz/seeds.c $(LIBCOMMON) | $(PROTO_H)
	$(CC) $(CPPFLAGS_ALL) -Wno-missing-prototypes $(CFLAGS) -o $@ $< $(LIBCOMMON) $(LDLIBS_ALL)
$(BUILD)/seeds/made: $(BUILD)/fuzz-seeds tests/fuzz/ondisk-seeds.sh
	rm -rf $(BUILD)/seeds
	$(BUILD)/fuzz-seeds $(BUILD)/seeds
	tests/fuzz/ondisk-seeds.sh $(BUILD)/seeds
	touch $@

fuzz-bins: $(FUZZ_BINS) $(BUILD)/seeds/made

BENCH_SRCS = $(wildcard bench/*.c)
BENCH_BINS = $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

$(BUILD)/bench/%: bench/%.c $(LIBO2DLM) $(LIBCOMMON) | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -Wno-missing-prototypes $(CFLAGS) -o $@ $< $(LIBO2DLM) $(LIBCOMMON) $(LDLIBS_ALL)

$(BUILD)/tests/lib%.so: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -Wno-missing-prototypes $(CFLAGS) -fPIC -shared -o $@ $< -ldl

unit-bins: $(UNIT_BINS)

# The builds in parallel (they are a minute and a half of CI's 20 otherwise).
JOBS		?= $(shell nproc 2>/dev/null || echo 1)

check:
	$(MAKE) -j$(JOBS) all unit-bins
	$(MAKE) -j$(JOBS) SANITIZE=1 all unit-bins
	$(MAKE) -j$(JOBS) FUZZ=1 BUILD=build/fuzz fuzz-bins
	tests/run --build build --san-build build/san

# One test, built first: a unit test (T=test_dlmd_grant, tests/unit/NAME.c)
# or an integration script (T=dlmfs, tests/integration/NAME.sh) run on
# $(BUILD)'s daemons; with SANITIZE=1, the sanitizer build's.
test:
ifeq ($(wildcard tests/unit/$(T).c),tests/unit/$(T).c)
	$(MAKE) $(BUILD)/tests/$(T)
	$(BUILD)/tests/$(T)
else ifeq ($(wildcard tests/integration/$(T).sh),tests/integration/$(T).sh)
	$(MAKE) -j$(JOBS) all
	OCFS2_BUILD=$(abspath $(BUILD)) bash tests/integration/$(T).sh
else
	@echo "usage: make test T=NAME, NAME a unit test (tests/unit/NAME.c)" \
	    "or an integration script (tests/integration/NAME.sh); '$(T)' is neither" >&2
	@exit 2
endif

# The fuzz harnesses, FUZZ_SECONDS each (CI runs them briefly through
# tests/integration/fuzz.sh, the soak a million times each).
FUZZ_BUILD	?= build/fuzz
FUZZ_SECONDS	?= 60
fuzz:
	$(MAKE) -j$(JOBS) FUZZ=1 BUILD=$(FUZZ_BUILD) fuzz-bins
	tests/fuzz/run --build $(FUZZ_BUILD) --seconds $(FUZZ_SECONDS)

bench: all $(BENCH_BINS)
	bench/run --build $(BUILD)

# The soak: fsx on fsd with many more operations and seeds than CI runs
# (on a max-compat, a sparse, a default-level and a max-features volume),
# on each volume geometry (BLOCK:CLUSTER, passed to mkfs.ocfs2), then once more with fsd's
# writeback cache off; then fsd_xattr.sh with SOAK_XATTR_ATTRS attributes
# on a file, on each geometry and 16K clusters; then fsd_crash.sh with more rounds on
# mkfs.ocfs2's default, max-compat and max-features levels; then
# fsd_refcount.sh with more model operations, seeds and kills and a
# refcount tree of 40000 records; then
# fsd_dxdir.sh with more kills and its speed figure; then fsd_bigdir.sh
# with SOAK_BIGDIR_NAMES names in one directory (three nodes); then
# fsd_stress.sh (three nodes) with more seeds and operations, apart and in one directory; then
# fsd_handoff.sh with more turns between two nodes and more kills of the writer; then
# fsd_handoff_rounds.sh with SOAK_HANDOFF_ROUNDS write/read rounds; then
# SOAK_FUZZ_RUNS executions of each fuzz harness (about an hour for a
# million each on two cores, most of it hbd's, whose fences kill the
# stand-in process it then forks again, then dlmd's and fsd's sockets).
# then tests/integration/fault_daemons.sh with every kind of fault (but
# those its OPEN_KINDS leave out) and more rounds (each about 10-20 s;
# SOAK_FAULT_SEED repeats a schedule); then hbd_load.sh with
# SOAK_HBD_LOAD_SECONDS of load.
# About 117 minutes; every run is made and the target fails if any did.
SOAK_OPS	 ?= 20000
SOAK_SEEDS	 ?= 101 102 103 104 105 106 107 108
SOAK_GEOMETRIES	 ?= 1024:4096 4096:1M 512:4096
SOAK_CRASH_ROUNDS ?= 40
SOAK_DXDIR_ROUNDS ?= 20
SOAK_REFCOUNT_OPS ?= 3000
SOAK_REFCOUNT_SEEDS ?= 1 2 3 4 5 6
SOAK_REFCOUNT_ROUNDS ?= 10
SOAK_REFCOUNT_TREE_RECORDS ?= 40000
SOAK_BIGDIR_NAMES ?= 1000000
SOAK_XATTR_ATTRS ?= 3000
SOAK_FUZZ_RUNS	 ?= 1000000
SOAK_STRESS_SEEDS ?= 11 12 13 14 15 16 17 18
SOAK_STRESS_OPS	 ?= 20000
SOAK_STRESS_SHARED_SEEDS ?= 1 2 3 4
SOAK_STRESS_SHARED_OPS ?= 5000
SOAK_FAULT_ROUNDS ?= 40
SOAK_FAULT_SEED	 ?=
SOAK_HBD_LOAD_SECONDS ?= 180
SOAK_HANDOFF_TURNS ?= 600
SOAK_HANDOFF_KILLS ?= 10
SOAK_HANDOFF_ROUNDS ?= 1000
SOAK_ALLOC_WORKERS ?= 11
SOAK_ALLOC_SECONDS ?= 60
SOAK_LOCK_HOLD	 ?= 200

soak: all
	@rc=0; \
	for g in $(SOAK_GEOMETRIES); do \
		echo "== fsd_fsx: $(SOAK_OPS) operations, seeds $(SOAK_SEEDS), blocks:clusters $$g"; \
		FSD_FSX_MKFS="-b $${g%%:*} -C $${g#*:}" FSD_FSX_OPS=$(SOAK_OPS) \
		    FSD_FSX_SEEDS="$(SOAK_SEEDS)" FSD_FSX_SPARSE_SEEDS="$(SOAK_SEEDS)" \
		    FSD_FSX_LEVEL_SEEDS="$(SOAK_SEEDS)" OCFS2_BUILD=$(BUILD) \
		    bash tests/integration/fsd_fsx.sh || rc=1; \
	done; \
	echo "== fsd_fsx: the same without fsd's writeback cache"; \
	FSD_FSX_FSD="-o writeback_cache=0" FSD_FSX_OPS=$(SOAK_OPS) \
	    FSD_FSX_SEEDS="$(SOAK_SEEDS)" FSD_FSX_SPARSE_SEEDS="$(SOAK_SEEDS)" \
	    FSD_FSX_LEVEL_SEEDS="$(SOAK_SEEDS)" OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/fsd_fsx.sh || rc=1; \
	echo "== fsd_xattr: $(SOAK_XATTR_ATTRS) attributes, blocks:clusters $(SOAK_GEOMETRIES) 4096:16384"; \
	FSD_XATTR_ATTRS=$(SOAK_XATTR_ATTRS) FSD_XATTR_GEOMETRIES="$(SOAK_GEOMETRIES) 4096:16384" \
	    OCFS2_BUILD=$(BUILD) bash tests/integration/fsd_xattr.sh || rc=1; \
	for l in default max-compat max-features; do \
		echo "== fsd_crash: $(SOAK_CRASH_ROUNDS) rounds, $$l level"; \
		FSD_CRASH_ROUNDS=$(SOAK_CRASH_ROUNDS) FSD_CRASH_LEVEL=$${l#default} OCFS2_BUILD=$(BUILD) \
		    bash tests/integration/fsd_crash.sh || rc=1; \
	done; \
	echo "== fsd_refcount: $(SOAK_REFCOUNT_OPS) operations, seeds $(SOAK_REFCOUNT_SEEDS), $(SOAK_REFCOUNT_ROUNDS) crash rounds, a tree of $(SOAK_REFCOUNT_TREE_RECORDS) records"; \
	FSD_REFCOUNT_OPS=$(SOAK_REFCOUNT_OPS) FSD_REFCOUNT_SEEDS="$(SOAK_REFCOUNT_SEEDS)" \
	    FSD_REFCOUNT_ROUNDS=$(SOAK_REFCOUNT_ROUNDS) FSD_REFCOUNT_TREE_RECORDS=$(SOAK_REFCOUNT_TREE_RECORDS) \
	    OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/fsd_refcount.sh || rc=1; \
	echo "== fsd_dxdir: $(SOAK_DXDIR_ROUNDS) kills while creating, the speed of indexed and linear directories"; \
	FSD_DXDIR_CRASH_ROUNDS=$(SOAK_DXDIR_ROUNDS) FSD_DXDIR_SPEED=1 OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/fsd_dxdir.sh || rc=1; \
	echo "== fsd_bigdir: $(SOAK_BIGDIR_NAMES) names in one indexed directory, three nodes"; \
	FSD_BIGDIR_N=$(SOAK_BIGDIR_NAMES) FSD_BIGDIR_BUSY=600 FSD_BIGDIR_CHURN=300 \
	    OCFS2_BUILD=$(BUILD) bash tests/integration/fsd_bigdir.sh || rc=1; \
	echo "== fsd_stress: $(SOAK_STRESS_OPS) operations per process, seeds $(SOAK_STRESS_SEEDS); $(SOAK_STRESS_SHARED_OPS) in one directory, seeds $(SOAK_STRESS_SHARED_SEEDS)"; \
	FSD_STRESS_SEEDS="$(SOAK_STRESS_SEEDS)" FSD_STRESS_OPS=$(SOAK_STRESS_OPS) \
	    FSD_STRESS_SHARED_SEEDS="$(SOAK_STRESS_SHARED_SEEDS)" \
	    FSD_STRESS_SHARED_OPS=$(SOAK_STRESS_SHARED_OPS) OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/fsd_stress.sh || rc=1; \
	echo "== fsd_handoff: $(SOAK_HANDOFF_TURNS) turns, $(SOAK_HANDOFF_KILLS) kills of the writer"; \
	FSD_HANDOFF_TURNS=$(SOAK_HANDOFF_TURNS) FSD_HANDOFF_KILLS=$(SOAK_HANDOFF_KILLS) \
	    OCFS2_BUILD=$(BUILD) bash tests/integration/fsd_handoff.sh || rc=1; \
	echo "== fsd_handoff_rounds: $(SOAK_HANDOFF_ROUNDS) write/read rounds"; \
	FSD_HANDOFF_ROUNDS=$(SOAK_HANDOFF_ROUNDS) OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/fsd_handoff_rounds.sh || rc=1; \
	echo "== fsd_coherence, fsd_cluster, fsd_handoff, fsd_stale_names: the lock hold time pinned at $(SOAK_LOCK_HOLD) ms"; \
	for t in fsd_coherence fsd_cluster fsd_handoff fsd_stale_names; do \
		FSD_CLUSTER_OPTS=lock_hold=$(SOAK_LOCK_HOLD),lock_hold_min=$(SOAK_LOCK_HOLD) \
		    OCFS2_BUILD=$(BUILD) bash tests/integration/$$t.sh || rc=1; \
	done; \
	echo "== fuzz: $(SOAK_FUZZ_RUNS) executions of each harness"; \
	$(MAKE) -j$(JOBS) FUZZ=1 BUILD=$(FUZZ_BUILD) fuzz-bins && \
	    tests/fuzz/run --build $(FUZZ_BUILD) --runs $(SOAK_FUZZ_RUNS) || rc=1; \
	echo "== fault_daemons: $(SOAK_FAULT_ROUNDS) rounds"; \
	FAULT_ROUNDS=$(SOAK_FAULT_ROUNDS) $(if $(SOAK_FAULT_SEED),FAULT_SEED=$(SOAK_FAULT_SEED)) \
	    OCFS2_BUILD=$(BUILD) bash tests/integration/fault_daemons.sh || rc=1; \
	echo "== fsd_steal, fsd_alloc_death: $(SOAK_ALLOC_WORKERS) workers a node, $(SOAK_ALLOC_SECONDS) s of load"; \
	FSD_STEAL_WORKERS=$(SOAK_ALLOC_WORKERS) OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/fsd_steal.sh || rc=1; \
	FSD_ALLOC_DEATH_WORKERS=$(SOAK_ALLOC_WORKERS) FSD_ALLOC_DEATH_LOAD_S=$(SOAK_ALLOC_SECONDS) \
	    OCFS2_BUILD=$(BUILD) bash tests/integration/fsd_alloc_death.sh || rc=1; \
	echo "== hbd_load: $(SOAK_HBD_LOAD_SECONDS) s of load"; \
	HBD_LOAD_SECONDS=$(SOAK_HBD_LOAD_SECONDS) OCFS2_BUILD=$(BUILD) \
	    bash tests/integration/hbd_load.sh || rc=1; \
	exit $$rc

# systemd units: ocfs2.target plus the service of each daemon that is built,
# made from systemd/*.in with the install paths (always regenerated: they
# depend on PREFIX). ocfs2.target.requires/ links make the target require
# every installed service.
UNITS	 = ocfs2.target $(patsubst systemd/%.in,%,$(wildcard $(DAEMONS:%=systemd/ocfs2-%.service.in)))
SERVICES = $(filter %.service,$(UNITS))
ALL_UNITS = $(patsubst systemd/%.in,%,$(wildcard systemd/*.in))
DOCS	 = README.md systemd/cluster.conf.example
MAN1	 = $(wildcard man/*.1)
MAN5	 = $(wildcard man/*.5)
MAN8	 = $(wildcard man/*.8)

$(BUILD)/systemd/%: systemd/%.in FORCE
	@mkdir -p $(dir $@)
	sed -e 's|@SBINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< >$@

units: $(UNITS:%=$(BUILD)/systemd/%)

# mount -t fuse.fsd / fstab: the helper, with fsd's installed path.
$(BUILD)/mount.fuse.fsd: scripts/mount.fuse.fsd.in FORCE
	@mkdir -p $(dir $@)
	sed -e 's|@SBINDIR@|$(BINDIR)|g' $< >$@
	chmod 0755 $@

# The OCF resource agent, with the mount helper's installed path.
$(BUILD)/ocf/fsd: ocf/fsd.in FORCE
	@mkdir -p $(dir $@)
	sed -e 's|@MOUNTDIR@|$(MOUNTDIR)|g' $< >$@
	chmod 0755 $@

install: all units
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR)/ocfs2.target.requires $(DESTDIR)$(DOCDIR)
	install -m 0755 $(DAEMONS:%=$(BUILD)/%) $(TOOLS:%=$(BUILD)/%) $(DESTDIR)$(BINDIR)/
	install -D -m 0755 $(BUILD)/mount.fuse.fsd $(DESTDIR)$(MOUNTDIR)/mount.fuse.fsd
	install -D -m 0755 $(BUILD)/ocf/fsd $(DESTDIR)$(OCFDIR)/fsd
	install -m 0644 $(UNITS:%=$(BUILD)/systemd/%) $(DESTDIR)$(UNITDIR)/
	$(if $(SERVICES),ln -sfn $(SERVICES:%=../%) $(DESTDIR)$(UNITDIR)/ocfs2.target.requires/)
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(MAN8) $(DESTDIR)$(MANDIR)/man8/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(DAEMONS) $(TOOLS)) $(DESTDIR)$(MOUNTDIR)/mount.fuse.fsd \
	    $(DESTDIR)$(OCFDIR)/fsd
	rmdir $(DESTDIR)$(OCFDIR) 2>/dev/null || true
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(ALL_UNITS)) \
	    $(addprefix $(DESTDIR)$(UNITDIR)/ocfs2.target.requires/,$(filter %.service,$(ALL_UNITS)))
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(MAN5))) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN8)))
	rmdir $(DESTDIR)$(UNITDIR)/ocfs2.target.requires $(DESTDIR)$(DOCDIR) 2>/dev/null || true

clean:
	rm -rf build

.PHONY: all check test bench soak fuzz fuzz-bins install uninstall clean unit-bins units FORCE
.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
