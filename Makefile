# naglefix - see README.md.   make | make test | make demo | make bench | make bench-real
#
# CPPFLAGS, CFLAGS and LDFLAGS reach every compile and link line (a
# distribution's hardening flags: make CPPFLAGS=-D_FORTIFY_SOURCE=2
# LDFLAGS=-Wl,-z,relro). Warnings are errors unless WERROR= (empty).
# Each object and program records the headers it includes in a .d file
# beside it (-MMD -MP), so a header change rebuilds what uses it.

CC       ?= cc
CFLAGS   ?= -O2 -g
CPPFLAGS ?=
LDFLAGS  ?=
WERROR   ?= -Werror
WFLAGS   := -std=gnu11 -Wall -Wextra $(WERROR) -Wshadow -Wmissing-prototypes
DEPFLAGS := -MMD -MP
# Headers: include/ holds what every part shares (src/common's); a part's
# own headers sit beside its code and are included by their path from src/
# ("core/nf_conn.h"), so an include says which folder it reaches into.
# -iquote, not -I: <...> never looks in src/ (src/bpf is no <bpf/...>).
XCPPFLAGS := -D_GNU_SOURCE -iquote src -Iinclude
XCFLAGS  := $(WFLAGS) -fPIC -fvisibility=hidden
LDLIBS   := -ldl -lpthread
# A test program: one source, compiled and linked in one step.
TEST_CC   = $(CC) $(XCPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(WFLAGS) $(DEPFLAGS) $(LDFLAGS)
B        := build
PREFIX   ?= /usr/local

# The library's folders (each has a README.md; tests/check-layers.sh
# guards which may include which): src/common/ (what the library and the
# command share), src/core/ (the descriptor table and the services every
# action uses), src/actions/ (track.c chooses a socket's action; a folder
# per action), src/process/ (load, fork, seccomp), src/interpose/ (the
# libc-named entry points).
COMMON_OBJS := $(B)/obj/common/policy.o $(B)/obj/common/config.o $(B)/obj/common/exe.o \
	$(B)/obj/common/json.o $(B)/obj/common/addr.o
# Modules with no interposed name: the static archive the unit tests link
# (and the command, for the policy, JSON and addresses).
CORE_OBJS := $(COMMON_OBJS) $(B)/obj/core/conn.o $(B)/obj/core/hot.o $(B)/obj/core/aside.o
# The coalesce action and the audit action: a file split off one of them
# is added here, and both the library and the unit tests link it.
COALESCE_OBJS := $(B)/obj/actions/coalesce/coalesce.o $(B)/obj/actions/coalesce/coalesce_buf.o \
	$(B)/obj/actions/coalesce/coalesce_pending.o $(B)/obj/actions/coalesce/coalesce_handler.o
AUDIT_OBJS := $(B)/obj/actions/audit/audit.o $(B)/obj/actions/audit/audit_recv.o \
	$(B)/obj/actions/audit/audit_log.o
# What the unit tests of coalesce and audit link beside the core: those
# modules and what they call, with nf_real filled by the tests' fakes.
# Not timer.c (tests/unit/fake_timer.c stands in: no thread, a clock the
# test moves) and nothing that interposes (real.c, process/, interpose/).
SEAM_OBJS := $(COALESCE_OBJS) $(AUDIT_OBJS) $(B)/obj/core/copyin.o $(B)/obj/core/log.o \
	$(B)/obj/core/reach.o \
	$(B)/obj/actions/track.o $(B)/obj/actions/auto/auto.o $(B)/obj/actions/quickack/quickack.o
LIB_OBJS  := $(CORE_OBJS) \
	$(B)/obj/core/real.o $(B)/obj/process/init.o $(B)/obj/process/atfork.o $(B)/obj/process/said.o \
	$(B)/obj/core/clock.o $(B)/obj/core/log.o $(B)/obj/core/reach.o $(B)/obj/actions/track.o \
	$(COALESCE_OBJS) $(B)/obj/core/copyin.o $(B)/obj/core/timer.o \
	$(B)/obj/actions/auto/auto.o $(B)/obj/actions/quickack/quickack.o \
	$(AUDIT_OBJS) \
	$(B)/obj/interpose/connect.o $(B)/obj/interpose/sockopt.o \
	$(B)/obj/interpose/write.o $(B)/obj/interpose/read.o \
	$(B)/obj/interpose/fd.o $(B)/obj/interpose/wait.o \
	$(B)/obj/interpose/process.o $(B)/obj/interpose/stdio.o \
	$(B)/obj/interpose/aio.o $(B)/obj/interpose/sandbox.o $(B)/obj/process/sandbox.o
# The command: every file of src/cli/ and its folders (naglefix.c, the
# dispatcher; common/, what the commands share; a folder a command). The packet side (src/wire/: capture
# readers, decoder, live ring, detector) is an archive of its own that the
# command and tests/wire's unit tests link; the library never does.
CLI_OBJS  := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/cli/*.c src/cli/*/*.c))
# Every command's folder and cli/common, all of src/cli but its main
# (naglefix.c): libnfcli.a, which the command and the tests of its
# functions (tests/cli, tests/fix) link.
CLI_LIB_OBJS := $(filter-out $(B)/obj/cli/naglefix.o,$(CLI_OBJS))
WIRE_OBJS := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/wire/*.c))
# watch's metrics (src/metrics/: the series, their text, the HTTP endpoint,
# the textfile): an archive of its own too, linked by the command and by
# tests/metrics' unit tests.
METRICS_OBJS := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/metrics/*.c))
# naglefix's kernel program (src/bpf/: assembled from a policy, loaded and
# attached to cgroups through bpf(2)): an archive the command and
# tests/attach's programs link; the library never does.
BPF_OBJS  := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/bpf/*.c))
# a namespace's routes through rtnetlink (src/route/: attach's quickack
# rules): an archive the command and tests/cli's programs link.
ROUTE_OBJS := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/route/*.c))

UNIT_SRCS := $(wildcard tests/unit/*.c)
# How every Check program adds and runs its tests (the name filter T, the
# SKIP lines): linked into tests/unit's, tests/cli's, tests/wire's and
# tests/metrics' programs alike.
UNIT_RUN  := $(B)/tests/unit/unit.o
UNIT_OBJS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%.o,$(UNIT_SRCS))
ITEST_SRCS := $(wildcard tests/integration/test_*.c)
ITESTS    := $(patsubst tests/integration/%.c,$(B)/tests/%,$(ITEST_SRCS))
CTEST_SRCS := $(wildcard tests/coalesce/test_*.c)
CTESTS    := $(patsubst tests/coalesce/%.c,$(B)/tests/coalesce/%,$(CTEST_SRCS))
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

all: $(B)/libnaglefix.so $(B)/naglefix

include tests/difftest/difftest.mk

# Objects built before .d files were recorded know none of their headers,
# and a header change would leave them as they are: this stamp, made once
# per build directory, is newer than all of them, so each is rebuilt once.
DEPS_STAMP := $(B)/.deps-recorded
$(DEPS_STAMP):
	@mkdir -p $(dir $@)
	@touch $@

# The command looks for the library beside itself, in ../lib/naglefix/ (make
# install's place) and in ../lib/MULTIARCH/ (the Debian package's, where the
# loader finds it by name): MULTIARCH is the compiler's triplet.
MULTIARCH ?= $(shell $(CC) -print-multiarch 2>/dev/null)
$(B)/obj/cli/common/util.o: XCPPFLAGS += $(if $(MULTIARCH),-DNF_MULTIARCH='"$(MULTIARCH)"')

$(B)/obj/%.o: src/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(XCPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(XCFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/libnfcore.a: $(CORE_OBJS)
	$(AR) rcs $@ $^

$(B)/libnaglefix.so: $(LIB_OBJS) src/naglefix.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,--version-script=src/naglefix.map -Wl,-z,now \
		-Wl,-soname,libnaglefix.so -o $@ $(LIB_OBJS) $(LDLIBS)

$(B)/libnfwire.a: $(WIRE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/libnfmetrics.a: $(METRICS_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/libnfbpf.a: $(BPF_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/libnfroute.a: $(ROUTE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/libnfcli.a: $(CLI_LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# What the command links, in this order (make image's static command,
# conf/image/image.mk, links the same).
NAGLEFIX_INPUTS := $(B)/obj/cli/naglefix.o $(B)/libnfcli.a $(B)/libnfwire.a $(B)/libnfmetrics.a \
	$(B)/libnfbpf.a $(B)/libnfroute.a $(B)/libnfcore.a
$(B)/naglefix: $(NAGLEFIX_INPUTS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(NAGLEFIX_INPUTS) -lpthread -lm

# ---- the packet side's unit tests (tests/wire/check_*.c): one Check
# program each, linked with the wire and core archives, run by
# tests/wire/run.sh with its other checks.
WTEST_SRCS := $(wildcard tests/wire/check_*.c)
WTESTS     := $(patsubst tests/wire/%.c,$(B)/tests/wire/%,$(WTEST_SRCS))

$(B)/tests/wire/%: tests/wire/%.c $(UNIT_RUN) $(B)/libnfwire.a $(B)/libnfcore.a $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< $(UNIT_RUN) $(B)/libnfwire.a $(B)/libnfcore.a $(CHECK_LIBS) -lpthread -lm

# The model writer (tests/wire/model.c): captures of modelled ends over a
# path with a given round trip, for t_model.sh and tests/bench/scan.sh.
$(B)/tests/wire/model: tests/wire/model.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lm

test-wire: all $(WTESTS) $(B)/tests/wire/model
	tests/wire/run.sh

# naglefix watch on the live host, in cgroups and network namespaces, and
# watch --fix (tests/watch/run.sh: its scripts t_*.sh)
test-watch: all
	tests/watch/run.sh

# ---- the command's own functions (tests/cli/check_*.c): one Check program
# each, linked with the command's archive (libnfcli.a: all but its main),
# run by tests/cli/run.sh.
CTEST_CLI_SRCS := $(wildcard tests/cli/check_*.c)
CTEST_CLI      := $(patsubst tests/cli/%.c,$(B)/tests/cli/%,$(CTEST_CLI_SRCS))

$(B)/tests/cli/%: tests/cli/%.c $(UNIT_RUN) $(B)/libnfcli.a $(B)/libnfwire.a $(B)/libnfmetrics.a \
		$(B)/libnfbpf.a $(B)/libnfroute.a $(B)/libnfcore.a $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< $(UNIT_RUN) $(B)/libnfcli.a $(B)/libnfwire.a $(B)/libnfmetrics.a \
		$(B)/libnfbpf.a $(B)/libnfroute.a $(B)/libnfcore.a $(CHECK_LIBS) -lpthread -lm

test-cli: all $(CTEST_CLI)
	tests/cli/run.sh

# ---- watch's metrics (tests/metrics): the unit tests of src/metrics
# (check_*.c, linked with its archive), then the scripts (t_*.sh): a real
# Prometheus scraping watch, node_exporter reading --metrics-file, the
# alert rules under promtool, bad clients, the service unit's hardening.
MTEST_SRCS := $(wildcard tests/metrics/check_*.c)
MTESTS     := $(patsubst tests/metrics/%.c,$(B)/tests/metrics/%,$(MTEST_SRCS))

$(B)/tests/metrics/%: tests/metrics/%.c $(UNIT_RUN) $(B)/libnfmetrics.a $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< $(UNIT_RUN) $(B)/libnfmetrics.a $(CHECK_LIBS) -lpthread -lm

test-metrics: all $(MTESTS)
	tests/metrics/run.sh

.PHONY: test-metrics

# naglefix attach, attach --list, detach (tests/attach/run.sh): src/bpf's
# checks and the table's two matchers linked with the archives
$(B)/tests/attach/%: tests/attach/%.c $(B)/libnfbpf.a $(B)/libnfcore.a $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< $(B)/libnfbpf.a $(B)/libnfcore.a

test-attach: all $(B)/tests/attach/check_bpf $(B)/tests/attach/match_table
	tests/attach/run.sh

# naglefix fix PID (tests/fix/run.sh; its api_check.c links libnfcli.a and
# libnfbpf.a)
test-fix: all $(B)/libnfcli.a $(B)/libnfbpf.a
	tests/fix/run.sh

# The documents: the man pages linted (mandoc, groff), and what they and the
# READMEs say of the tree checked against it
# (tests/man/run.sh).
test-man:
	tests/man/run.sh

# The README's examples, run as written (tests/readme/run.sh).
test-readme: all
	tests/readme/run.sh

# What each command costs on input of any size or kind (tests/bounds/run.sh),
# measured by the launcher tests/bounds/peak.c.
$(B)/tests/bounds/peak: tests/bounds/peak.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $<

test-bounds: all $(B)/tests/bounds/peak
	tests/bounds/run.sh

.PHONY: test-wire test-watch test-cli test-attach test-fix test-man test-readme test-bounds

# ---- tests ---------------------------------------------------------------

$(B)/tests/unit/%.o: tests/unit/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(XCPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(WFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/tests/check_naglefix: $(UNIT_OBJS) $(SEAM_OBJS) $(B)/libnfcore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(UNIT_OBJS) $(SEAM_OBJS) $(B)/libnfcore.a \
		$(CHECK_LIBS) -lpthread

$(B)/tests/%: tests/integration/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lpthread -lm

# A split-write client linked -static: no loader, so the library cannot
# enter it (what naglefix and naglefix audit then say, tests/integration
# and tests/audit). Not with CFLAGS: a sanitizer's runtime cannot be
# linked -static.
$(B)/tests/static_client: tests/fix/static_client.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(XCPPFLAGS) $(WFLAGS) -O2 -static -o $@ $<

$(B)/tests/bench: tests/bench/bench.c
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $<

$(B)/tests/devnull: tests/bench/devnull.c
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -ldl

# The detector fed decoded segments, no read (tests/bench/scan.sh).
$(B)/tests/detect_alone: tests/bench/detect_alone.c $(B)/libnfwire.a $(B)/libnfcore.a
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< $(B)/libnfwire.a $(B)/libnfcore.a -lm

# The least any per-connection detector must do on a capture, in levels
# (tests/bench/scan_floor.sh).
$(B)/tests/scan_floor: tests/bench/scan_floor.c
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $<

bench: all $(B)/tests/bench $(B)/tests/devnull $(B)/tests/wire/model $(B)/tests/detect_alone \
		$(B)/tests/scan_floor
	tests/bench/run.sh
	tests/bench/watch.sh
	tests/bench/watch_netns.sh
	tests/bench/scan.sh
	tests/bench/scan_busy.sh
	tests/bench/scan_floor.sh
	tests/bench/attach.sh
	tests/bench/quickack_route.sh

# pgbench and memaslap against PostgreSQL and memcached, the client under each
# action (tests/bench/real.sh; about 3 minutes; not part of make test)
bench-real: all
	tests/bench/real.sh

$(B)/tests/coalesce/%: tests/coalesce/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lpthread -lm

test-coalesce: all $(CTESTS)
	tests/coalesce/run.sh

$(B)/tests/auto/%: tests/auto/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lpthread -lm

test-auto: all $(B)/tests/auto/test_auto $(B)/tests/auto/test_auto_sends $(B)/tests/coalesce/test_integrity
	tests/auto/run.sh

# The hooks' one list (src/core/nf_hook_list.h) against the version script,
# the script against the library's exports, the objects against the list.
test-exports: $(B)/libnaglefix.so
	CC='$(CC)' tests/check-exports.sh $(B)/libnaglefix.so src/naglefix.map \
		src/core/nf_hook_list.h $(LIB_OBJS)

# The include graph of src/ and include/: no cycle, no include that points
# the wrong way between src/'s folders, no private header (NAME_int.h)
# reached from another folder, every header named by the rule, no circle
# between the command's files (tests/check-layers.sh says how it is read;
# its self-test proves it fails on each).
test-layers:
	@bash -c '. tests/lib.sh; part check-layers.sh tests/check-layers.sh; \
		part check-layers-self.sh tests/check-layers-self.sh; finish'

# make test-unit [T=pattern] [SUITE=conn] [CASE=startup]: T picks tests by
# name, SUITE and CASE are Check's CK_RUN_SUITE and CK_RUN_CASE.
test-unit: $(B)/tests/check_naglefix
	cd tests/unit && CK_DEFAULT_TIMEOUT=30 $(if $(SUITE),CK_RUN_SUITE='$(SUITE)') \
		$(if $(CASE),CK_RUN_CASE='$(CASE)') ../../$(B)/tests/check_naglefix

test-integration: all $(ITESTS) $(B)/tests/static_client
	tests/integration/run.sh

test-legacy: all
	tests/legacy/run.sh nodelay

test-audit: all $(B)/tests/bench $(B)/tests/static_client
	tests/audit/run.sh

test:
	tests/run-all.sh

# make check: the edit-compile-test loop, what an edit of the library or
# the command is tried with first: the build, the unit, cli and
# integration suites, and the layer check (not its self-test, which
# proves the checker). Ends with "N passed, M failed".
check: all
	@bash -c '. tests/lib.sh; part unit $(MAKE) -s test-unit; part cli $(MAKE) -s test-cli; \
		part integration $(MAKE) -s test-integration; part layers tests/check-layers.sh; finish'

demo: all
	tests/legacy/demo.sh

# make install [PREFIX=/usr/local] [DESTDIR=] [NFLIBDIR=]: the library where
# the command looks for it (NFLIBDIR, by default ../lib/naglefix/ from bin/;
# the Debian package's /usr/lib/MULTIARCH also), man pages, and the example
# config, which never replaces an existing /etc/naglefix.conf.
NFLIBDIR ?= $(PREFIX)/lib/naglefix
LIBDIR  = $(DESTDIR)$(NFLIBDIR)
BINDIR  = $(DESTDIR)$(PREFIX)/bin
MANDIR  = $(DESTDIR)$(PREFIX)/share/man
ETCDIR  = $(DESTDIR)/etc

install: all
	install -d $(LIBDIR) $(BINDIR) $(MANDIR)/man1 $(MANDIR)/man5 $(MANDIR)/man7 $(ETCDIR)
	install -m 0644 $(B)/libnaglefix.so $(LIBDIR)/libnaglefix.so
	install -m 0755 $(B)/naglefix $(BINDIR)/naglefix
	install -m 0644 src/man/naglefix.1 $(MANDIR)/man1/naglefix.1
	install -m 0644 src/man/naglefix.conf.5 $(MANDIR)/man5/naglefix.conf.5
	install -m 0644 src/man/naglefix.7 $(MANDIR)/man7/naglefix.7
	[ -e $(ETCDIR)/naglefix.conf ] || install -m 0644 conf/naglefix.conf $(ETCDIR)/naglefix.conf

uninstall:
	rm -f $(LIBDIR)/libnaglefix.so $(BINDIR)/naglefix \
		$(MANDIR)/man1/naglefix.1 $(MANDIR)/man5/naglefix.conf.5 $(MANDIR)/man7/naglefix.7
	-rmdir $(LIBDIR) 2>/dev/null

clean:
	rm -rf $(B)

# ---- the Debian package (conf/debian/; tests/deb) --------------------------
# make deb [DEB_REVISION=1]: the tree copied to build/deb/naglefix-VERSION/,
# conf/debian/ laid out as its debian/, a debian/changelog written from
# include/nf_version.h (the one version: the package's is VERSION-REVISION),
# dpkg-buildpackage; the package is build/deb/naglefix_VERSION-REVISION_ARCH.deb.
# The copy's compiled tree (its build/) is kept in $(B)/deb-compiled and
# reused by the next make deb (dpkg-buildpackage -nc) only while DEB_INPUTS,
# the flags and the compiler are byte for byte those it was compiled from
# (their sha256 in its .inputs): a second revision of the same tree is not
# compiled again; any change is compiled afresh.
NF_VERSION   := $(shell sed -n 's/^\#define NF_VERSION "\(.*\)"/\1/p' include/nf_version.h)
DEB_REVISION ?= 1
DEB_SRC      := $(B)/deb/naglefix-$(NF_VERSION)
DEB_INPUTS   := Makefile src include tests conf README.md LICENSE
DEB_KEEP     := $(B)/deb-compiled
# the date of the tree's last commit (the same package from the same tree), or now
DEB_DATE      = $(shell git log -1 --format=%aD 2>/dev/null || date -R)
# what the compiled tree is made from, as one sha256 (make deb-inputs prints it;
# the flags as in / : the copy's path, in them, is $(B)'s, as is the kept tree)
DEB_FINGERPRINT = { tar -c --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner $(DEB_INPUTS) && \
	env | grep '^DEB_' | grep -v '^DEB_REVISION=' | sort && \
	(cd / && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags) && cc --version; } | sha256sum

deb:
	rm -rf $(B)/deb
	mkdir -p $(DEB_SRC)
	cp -a $(DEB_INPUTS) $(DEB_SRC)/
	cp -a conf/debian $(DEB_SRC)/debian
	printf '%s\n' 'naglefix ($(NF_VERSION)-$(DEB_REVISION)) unstable; urgency=medium' '' \
		'  * Version $(NF_VERSION) (include/nf_version.h), built by make deb.' '' \
		' -- $(shell sed -n 's/^Maintainer: //p' conf/debian/control)  $(DEB_DATE)' \
		>$(DEB_SRC)/debian/changelog
	cd $(DEB_SRC) && $(DEB_FINGERPRINT) >.inputs
	# the copy's make takes nothing of this one's command line (B= would be
	# its build directory, which its clean removes)
	if cmp -s $(DEB_SRC)/.inputs $(DEB_KEEP)/.inputs; then \
		mv $(DEB_KEEP)/build $(DEB_SRC)/build && nc=-nc; else nc=; fi; \
	rm -rf $(DEB_KEEP); \
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b -jauto $$nc
	mkdir -p $(DEB_KEEP)
	mv $(DEB_SRC)/build $(DEB_SRC)/.inputs $(DEB_KEEP)/

deb-inputs:
	@$(DEB_FINGERPRINT)

# The package built, linted by lintian, installed with dpkg -i on this
# machine, upgraded and purged (tests/deb/run.sh; root; about a minute).
test-deb:
	tests/deb/run.sh

.PHONY: deb deb-inputs test-deb install uninstall bench bench-real all test check test-auto test-coalesce test-exports test-unit test-integration test-legacy test-audit demo clean

# ---- sanitizers, leak check and fuzzing (tests/sanitize, tests/fuzz) -------
# Each builds its own variants (build/asan, build/tsan, build/fuzz; the
# leak check preloads build/'s library) and ends with "N passed, M failed". FUZZ_TIME=seconds a target:
# 60 in `make fuzz`, 5 in `make test` (tests/run-all.sh).

test-sanitize:
	tests/sanitize/run.sh

fuzz:
	tests/fuzz/run.sh

.PHONY: test-sanitize fuzz

# ---- stress and security (tests/stress, tests/security) --------------------
# Each run.sh ends with "N passed, M failed". The security probe links the
# library itself (DT_NEEDED, RUNPATH to this build directory): a setuid
# program ignores LD_PRELOAD but loads what it needs.

STEST_SRCS := $(wildcard tests/stress/stress_*.c)
STESTS     := $(patsubst tests/stress/%.c,$(B)/tests/stress/%,$(STEST_SRCS))

$(B)/tests/stress/%: tests/stress/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lpthread -lm

$(B)/tests/security/sec_probe: tests/security/sec_probe.c $(B)/libnaglefix.so
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< \
		-Wl,--no-as-needed -L$(abspath $(B)) -lnaglefix -Wl,-rpath,$(abspath $(B))

test-stress: all $(STESTS)
	tests/stress/run.sh

test-security: all $(B)/tests/security/sec_probe
	tests/security/run.sh

.PHONY: test-stress test-security

# ---- musl (tests/musl): the library, the command and the integration and
# coalesce programs built with musl-gcc into build/musl, both suites and
# tests/musl's own programs run against them.

$(B)/tests/musl/%: tests/musl/%.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lpthread -ldl

test-musl:
	tests/musl/run.sh

.PHONY: test-musl

# ---- a machine of the tests' own (tests/vm): qemu, the host's root over
# 9p, systemd as PID 1. Descriptors above 65,536 and the systemd drop-in.

$(B)/tests/vm/vminit: tests/vm/vminit.c
	@mkdir -p $(dir $@)
	$(TEST_CC) -static -o $@ $<

# What unit_probe.c tries from inside conf/naglefix-watch.service, there.
$(B)/tests/vm/unit_probe: tests/vm/unit_probe.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $<

test-vm: all $(B)/tests/vm/vminit $(B)/tests/vm/unit_probe $(B)/tests/stress/stress_highfd $(B)/tests/check_naglefix \
		$(B)/tests/cli/check_cgroup
	tests/vm/run.sh

.PHONY: test-vm

include tests/inventory/inventory.mk
include tests/external/external.mk
include conf/image/image.mk

# What each object and program includes, as the compiler found it (none
# before the first build, when everything is built anyway).
-include $(wildcard $(B)/obj/*.d $(B)/obj/*/*.d $(B)/obj/*/*/*.d $(B)/tests/*.d $(B)/tests/*/*.d)
