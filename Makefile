# dra-guard - one non-recursive Makefile.
#
#   make deps      install missing Debian packages (every build target runs it)
#   make           build ./dra-guard (the "rel" flavour: -O2, quick to rebuild)
#   make install   ./dra-guard into $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local), so the
#                  docs' `dra-guard ...` commands run as written
#   make release   build build/release/dra-guard: -O3, LTO and profile-guided,
#                  what the container image and the benchmarks run
#   make test      unit tests (rel and ASan+UBSan), end-to-end tests, fuzz smoke;
#                  ends with one line "N passed, N failed"
#   make check     the edit loop: rel unit tests, golden cases, dry-run, source rules
#   make run       the webhook on localhost with dev certificates and the example
#                  policy (leaves ./dra-guard in place)
#   make bench     benchmarks of the release build (engine, end to end, scaling,
#                  profile, audit-log replay, gate release); BENCH_COMPARE=1 or `make bench-compare` also runs them
#                  against the Go peers
#   make bench-scale  the cluster view (release build) on 5,000 nodes and 100,000
#                  claims in the real API server, next to client-go's figures
#                  (loading takes about 4 minutes), with 150,000 Pods and the Nodes;
#                  BENCH_SCALE_ARGS=--synthetic serves the same data set from
#                  files instead of the API server
#   make fuzz      libFuzzer targets, FUZZ_SECONDS each
#   make golden-update   record what the engine says of every golden case, and the vap YAML
#                  (tests/golden/README.md); review the diff
#   make replay-fixtures  record the audit log dra-guard replay is tested with
#                  (the ledger scenarios through the real API server) and
#                  rewrite its expected reports (tests/fixtures/replay/)
#   make mutation-check  break each rule in turn (the "mutant" flavour); the
#                  golden cases must notice every break
#   make soak      the release server under load for SOAK_SECONDS, sampling RSS and fds;
#                  then memory attacks at full size (tools/soak_hostile.py)
#   make image     build the container image with podman and run it (both stages,
#                  checked: tests/image/test_image_build.py)
#   make clean
#
# Output is one line per target; V=1 shows the commands.
#
# Flavours, objects under $(BUILD)/<flavour>/:
#   rel      -O2 -g                         ./dra-guard, unit and end-to-end tests
#   asan     -O1, ASan + UBSan              every unit test again, the leak tests
#   release  -O3 -flto, -fprofile-use       `make release`, image, bench, soak
#   pgogen   -O3 -flto, -fprofile-generate  the training run release is built from
#   mutant   -O1 -g, -DDRA_GUARD_MUTANT     test_engine for `make mutation-check`
# policy/*/*.c make libpolicy.a, webhook/*/*.c (but cmd/main.c) libwebhook.a;
# webhook/cmd/main.c is the program; tests/test_<module>.c is one cmocka binary per
# module. Each folder is compiled with -I for itself and the folders below it
# (LAYERS, below), so an arrow pointing up is a compile error; a policy
# module's test links libpolicy.a alone, so webhook -> policy is checked by
# the linker too.

.SUFFIXES:
.SECONDARY:
.DEFAULT_GOAL := all
SHELL := /bin/sh

BUILD ?= build
CC ?= cc
CLANG ?= clang
PKG_CONFIG ?= pkg-config
PYTHON ?= python3
PKGS := libmicrohttpd gnutls jansson yaml-0.1 libcrypto libcurl

# The version baked into the binary; the image build passes VERSION= because
# its context has no .git.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

V ?= 0
ifeq ($(V),1)
Q :=
msg = @:
else
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif

WARN := -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
BASE_CPPFLAGS := -D_GNU_SOURCE
# Deferred (=): evaluated when a recipe runs, after `deps` installed pkg-config data.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS))
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS)) -lpthread
CMOCKA_LIBS = $(shell $(PKG_CONFIG) --libs cmocka)

# The source folders, lowest first, and the folders each one may include
# (docs/development.md draws them). policy/ is the pure engine, webhook/ the
# program around it; tests/e2e/test_source_rules.py checks this table against
# the tree and the includes.
POLICY_DIRS := lib model config view ledger rules events offline
WEBHOOK_DIRS := base kube server cmd
LAYERS_policy/lib :=
LAYERS_policy/model := policy/lib
LAYERS_policy/config := policy/lib policy/model
LAYERS_policy/view := policy/lib policy/model
LAYERS_policy/ledger := policy/lib policy/model policy/config policy/view
LAYERS_policy/rules := $(LAYERS_policy/ledger) policy/ledger
LAYERS_policy/events := $(LAYERS_policy/rules) policy/rules
LAYERS_policy/offline := $(LAYERS_policy/events) policy/events
LAYERS_webhook/base := $(LAYERS_policy/offline) policy/offline
LAYERS_webhook/kube := $(LAYERS_webhook/base) webhook/base
LAYERS_webhook/server := $(LAYERS_webhook/kube) webhook/kube
LAYERS_webhook/cmd := $(LAYERS_webhook/server) webhook/server
SRC_DIRS := $(addprefix policy/,$(POLICY_DIRS)) $(addprefix webhook/,$(WEBHOOK_DIRS))

# After a failed compile of a folder's source: which headers that folder may
# include, because a header of a folder above it is "No such file" (the -I
# of each folder is its layer), which does not say that the include is the
# mistake.
layer_dir = $(patsubst %/,%,$(dir $(1)))
layer_note = $(if $(filter $(call layer_dir,$(1)),$(SRC_DIRS)),echo "note: $(call layer_dir,$(1)) may include \
	headers of its own folder $(if $(LAYERS_$(call layer_dir,$(1))),and of $(LAYERS_$(call layer_dir,$(1))),only) \
	(docs/development.md, Layout): a header not found is in a folder above it" >&2,true)
$(foreach d,$(SRC_DIRS),$(eval INC_$(d) := $(addprefix -I,$(d) $(LAYERS_$(d)))))
.PHONY: print-layers
print-layers:
	@$(foreach d,$(SRC_DIRS),echo '$(d): $(LAYERS_$(d))';)
# Tests, benchmarks and fuzz targets see everything.
INC_other := $(addprefix -I,$(SRC_DIRS)) -Itests

rel_CFLAGS := -O2 -g -fno-strict-aliasing
asan_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

# The release flavour is optimised with the profile of a training run
# (profile-guided optimisation: about 30% less CPU per review than plain
# -O3, see docs/performance.md). pgogen is the instrumented build that runs
# the training: bench/pgo_train.c, linked with every library object, answers
# the golden reviews and tools/pgo_corpus.py's large slice updates, and the
# pgogen dra-guard runs once so its main() has a profile too. Every release
# object must find its profile: a missing one (-Wmissing-profile) or a stale
# one (-Wcoverage-mismatch) is an error, never a quiet non-PGO build. The
# profile directory is an absolute path baked into the pgogen objects; it is
# part of the flags each flavour records in $(BUILD)/<flavour>/.flags, so a
# tree copied elsewhere rebuilds and retrains instead of writing into the
# original's directory.
PGO_DATA := $(abspath $(BUILD))/pgo-data
OPT_CFLAGS := -O3 -g -fno-strict-aliasing -flto=auto
pgogen_CFLAGS := $(OPT_CFLAGS) -fprofile-generate=$(PGO_DATA)
release_CFLAGS := $(OPT_CFLAGS) -fprofile-use=$(PGO_DATA) -fprofile-partial-training
release_OBJ_DEPS := $(PGO_DATA)/.trained
# The seam of policy/rules/mutant.h compiled in; nothing but test_engine is built so.
mutant_CFLAGS := -O1 -g -fno-strict-aliasing -DDRA_GUARD_MUTANT
FLAVOURS := rel asan release pgogen mutant

POLICY_SRC := $(sort $(wildcard $(addsuffix /*.c,$(addprefix policy/,$(POLICY_DIRS)))))
WEBHOOK_SRC := $(sort $(filter-out webhook/cmd/main.c,$(wildcard $(addsuffix /*.c,$(addprefix webhook/,$(WEBHOOK_DIRS))))))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_NAMES := $(patsubst tests/%.c,%,$(TEST_SRC))
# Tests that fail allocations on purpose wrap the allocator of the code
# under test (only the statically linked objects see the wrapper).
TEST_LDFLAGS_mutation := -Wl,--wrap=realloc
TEST_LDFLAGS_events := -Wl,--wrap=realloc
TEST_LDFLAGS_verdict := -Wl,--wrap=malloc,--wrap=realloc
TEST_LDFLAGS_policy := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc

TEST_SUPPORT_SRC := $(sort $(filter-out tests/test_%.c,$(wildcard tests/*.c)))
BENCH_SRC := $(sort $(wildcard bench/*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRC))

.PHONY: all release deps deps-test deps-bench deps-fuzz deps-image test check unit-test e2e-test fuzz-smoke \
	golden-update replay-fixtures mutation-check run bench bench-compare bench-base bench-scale fuzz fuzz-seeds soak image \
	install clean FORCE

all: dra-guard

deps:
	@tools/deps.sh build
deps-test:
	@tools/deps.sh build test
deps-bench:
	@tools/deps.sh build bench
deps-fuzz:
	@tools/deps.sh build fuzz
deps-image:
	@tools/deps.sh build image

dra-guard: $(BUILD)/rel/dra-guard
	$(call msg,CP,$@)
	$(Q)cp $< $@

release: $(BUILD)/release/dra-guard
	@echo "$<"

PREFIX ?= /usr/local
DESTDIR ?=
install: dra-guard
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX)/bin/dra-guard)
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin
	$(Q)install -m 0755 dra-guard $(DESTDIR)$(PREFIX)/bin/dra-guard

# The version lives in one generated file, rewritten only when it changes:
# `dra-guard version` is never stale, and a new version recompiles one file.
$(BUILD)/gen/version.c: FORCE
	@mkdir -p $(@D)
	@printf '/* generated by the Makefile */\n#include "version.h"\nconst char dra_guard_version[] = "%s";\n' \
		'$(subst ','',$(VERSION))' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# --- per-flavour rules ------------------------------------------------------
# $(BUILD)/<flavour>/.flags records the flags the flavour compiles with and
# the source folders; it is rewritten only when they change, and every
# object depends on it, so a change of flags, of the tree's location or of
# its folders rebuilds the flavour (an object whose recorded headers moved
# away would otherwise be kept, and link against structs it never saw).
.SECONDEXPANSION:
define flavour_rules
$(1)_POLICY_OBJ := $$(patsubst %.c,$(BUILD)/$(1)/%.o,$(POLICY_SRC))
$(1)_WEBHOOK_OBJ := $$(patsubst %.c,$(BUILD)/$(1)/%.o,$(WEBHOOK_SRC)) $(BUILD)/$(1)/gen/version.o
$(1)_SUPPORT_OBJ := $$(patsubst %.c,$(BUILD)/$(1)/%.o,$(TEST_SUPPORT_SRC))
$(1)_FLAGS = $$(CC) $$(BASE_CPPFLAGS) $$(PKG_CFLAGS) $$(WARN) $$($(1)_CFLAGS)

$(BUILD)/$(1)/.flags: FORCE | deps
	@mkdir -p $$(@D)
	@echo '$$($(1)_FLAGS) folders: $$(SRC_DIRS)' >$$@.tmp
	@if cmp -s $$@.tmp $$@; then rm -f $$@.tmp; else mv $$@.tmp $$@; fi

$(BUILD)/$(1)/gen/%.o: private INC := $$(INC_webhook/cmd)

$(BUILD)/$(1)/%.o: %.c $(BUILD)/$(1)/.flags $$($(1)_OBJ_DEPS) | deps
	$$(call msg,CC,$$@)
	@mkdir -p $$(@D)
	$$(Q)$$($(1)_FLAGS) $$(or $$(INC),$$(INC_other)) $$(PROFILE_EXTRA) -dumpbase $$< -MMD -MP -c -o $$@ $$< \
		|| { $$(call layer_note,$$<); exit 1; }

$(BUILD)/$(1)/gen/%.o: $(BUILD)/gen/%.c $(BUILD)/$(1)/.flags | deps
	$$(call msg,CC,$$@)
	@mkdir -p $$(@D)
	$$(Q)$$($(1)_FLAGS) $$(INC) $$(PROFILE_EXTRA) -dumpbase $$< -MMD -MP -c -o $$@ $$<

$(BUILD)/$(1)/libpolicy.a: $$($(1)_POLICY_OBJ)
	$$(call msg,AR,$$@)
	@rm -f $$@
	$$(Q)ar rcs $$@ $$^

$(BUILD)/$(1)/libwebhook.a: $$($(1)_WEBHOOK_OBJ)
	$$(call msg,AR,$$@)
	@rm -f $$@
	$$(Q)ar rcs $$@ $$^

$(BUILD)/$(1)/dra-guard: $(BUILD)/$(1)/webhook/cmd/main.o $(BUILD)/$(1)/libwebhook.a $(BUILD)/$(1)/libpolicy.a
	$$(call msg,LINK,$$@)
	$$(Q)$$(CC) $$(WARN) $$($(1)_CFLAGS) -o $$@ $$^ $$(PKG_LIBS)

$(BUILD)/$(1)/tests/test_%: $(BUILD)/$(1)/tests/test_%.o $$($(1)_SUPPORT_OBJ) \
		$$$$(if $$$$(wildcard webhook/*/$$$$*.c),$(BUILD)/$(1)/libwebhook.a) $(BUILD)/$(1)/libpolicy.a | deps-test
	$$(call msg,LINK,$$@)
	$$(Q)$$(CC) $$(WARN) $$($(1)_CFLAGS) -o $$@ $$^ $$(TEST_LDFLAGS_$$*) $$(CMOCKA_LIBS) $$(PKG_LIBS)
endef
$(foreach f,$(FLAVOURS),$(eval $(call flavour_rules,$(f))))

# Each folder's objects, in every flavour and the fuzz build, see only the
# headers its layer allows.
define dir_inc
$(BUILD)/$(1)/$(2)/%.o: private INC := $$(INC_$(2))
endef
$(foreach f,$(FLAVOURS) fuzz/obj,$(foreach d,$(SRC_DIRS),$(eval $(call dir_inc,$(f),$(d)))))

# The benchmark drivers' own code is not what they measure and is not
# trained: only the library they link is.
$(BUILD)/release/bench/%.o: private PROFILE_EXTRA := -Wno-missing-profile

$(BUILD)/release/bench/%: $(BUILD)/release/bench/%.o $(BUILD)/release/libwebhook.a $(BUILD)/release/libpolicy.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(WARN) $(release_CFLAGS) -o $@ $^ $(PKG_LIBS)

# Linked with the whole libraries, so every object writes a profile (a zero
# one for code the training does not reach, which -fprofile-partial-training
# then optimises as usual rather than as cold).
$(BUILD)/pgogen/bench/pgo_train: $(BUILD)/pgogen/bench/pgo_train.o $(BUILD)/pgogen/libwebhook.a $(BUILD)/pgogen/libpolicy.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(WARN) $(pgogen_CFLAGS) -o $@ $< -Wl,--whole-archive $(BUILD)/pgogen/libwebhook.a \
		$(BUILD)/pgogen/libpolicy.a -Wl,--no-whole-archive $(PKG_LIBS)

# The training run: every golden review and the large slice updates, under
# the built-in and a strict policy, on both endpoints. The golden reviews are
# the training set on purpose (they reach every rule), so editing one
# retrains the release build; the rel build never depends on training.
$(PGO_DATA)/.trained: $(BUILD)/pgogen/bench/pgo_train $(BUILD)/pgogen/dra-guard tools/pgo_corpus.py \
		$(wildcard tests/golden/cases/*.json) tests/golden/policies/strict.yaml
	$(call msg,PGO,training $(BUILD)/pgogen)
	@rm -rf $(PGO_DATA) $(BUILD)/pgo-corpus
	@mkdir -p $(PGO_DATA)
	$(Q)$(PYTHON) tools/pgo_corpus.py $(BUILD)/pgo-corpus
	$(Q)$(BUILD)/pgogen/bench/pgo_train - tests/golden/policies/strict.yaml -- $(BUILD)/pgo-corpus/*.json
	$(Q)$(BUILD)/pgogen/dra-guard version >/dev/null
	@touch $@

# $(BUILD)/image holds container storage (whole root filesystems, /etc/rc2.d
# and all): not searched.
-include $(shell find $(BUILD) -path '$(BUILD)/image' -prune -o -name '*.d' -type f -print 2>/dev/null)

# --- tests ------------------------------------------------------------------
# tools/run_tests.py runs every suite (a failure does not stop the others),
# echoes its output and ends with "N passed, N failed".
UNIT_FLAVOURS := rel asan
UNIT_BINS := $(foreach f,$(UNIT_FLAVOURS),$(addprefix $(BUILD)/$(f)/tests/,$(TEST_NAMES)))
export ASAN_OPTIONS := detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
# Tests find fixtures relative to the repository root.
export DRA_GUARD_ROOT := $(CURDIR)
export DRA_GUARD_SHARED := $(abspath $(CURDIR)/../shared)
export DRA_GUARD_BIN := $(abspath $(BUILD)/rel/dra-guard)
export DRA_GUARD_ASAN_BIN := $(abspath $(BUILD)/asan/dra-guard)

E2E_TESTS := $(sort $(wildcard tests/e2e/test_*.py))
FUZZ_SMOKE_SECONDS ?= 6
export FUZZ_SMOKE_SECONDS
UNIT_SUITES = $(addprefix unit:,$(UNIT_BINS))
E2E_SUITES = $(addprefix e2e:,$(E2E_TESTS))
FUZZ_SUITES = $(addprefix fuzz:$(BUILD)/fuzz/,$(FUZZ_NAMES))

# The benchmark drivers compile in both loops (rel objects, not linked):
# `make bench` is run rarely, and a driver that no longer compiles should
# not wait for it to be found.
BENCH_CHECK_OBJ = $(patsubst %.c,$(BUILD)/rel/%.o,$(BENCH_SRC))

test: $(UNIT_BINS) $(BUILD)/rel/dra-guard $(BUILD)/asan/dra-guard fuzz-build $(BENCH_CHECK_OBJ) | deps-test
	@$(PYTHON) tools/run_tests.py $(UNIT_SUITES) $(E2E_SUITES) $(FUZZ_SUITES)

# The edit loop: the unit tests of the rel build and the quick end-to-end
# checks that pin verdicts and layers (golden cases, dry-run, the source
# rules); no ASan, no fuzzing, no API server. `make test` runs everything.
CHECK_E2E := $(addprefix e2e:tests/e2e/,test_golden.py test_source_rules.py test_dryrun.py test_docs_commands.py)
check: $(addprefix $(BUILD)/rel/tests/,$(TEST_NAMES)) $(BUILD)/rel/dra-guard $(BENCH_CHECK_OBJ) | deps-test
	@$(PYTHON) tools/run_tests.py $(addprefix unit:$(BUILD)/rel/tests/,$(TEST_NAMES)) $(CHECK_E2E)

unit-test: $(UNIT_BINS) | deps-test
	@$(PYTHON) tools/run_tests.py $(UNIT_SUITES)

e2e-test: $(BUILD)/rel/dra-guard $(BUILD)/asan/dra-guard | deps-test
	@$(PYTHON) tools/run_tests.py $(E2E_SUITES)

fuzz-smoke: fuzz-build
	@$(PYTHON) tools/run_tests.py $(FUZZ_SUITES)

# The golden cases: gen.py writes them, test_engine --observe judges them, and
# the verdicts are recorded unless one contradicts its case's intent. Then
# the ValidatingAdmissionPolicies of the golden policies, the example and the
# deployed one (manifests/vap) are written again.
golden-update: $(BUILD)/rel/tests/test_engine $(BUILD)/rel/tests/test_vap
	$(Q)$(PYTHON) tests/golden/gen.py --observer $<
	$(Q)$(BUILD)/rel/tests/test_vap --update >/dev/null

# The recorded traffic of tests/e2e/test_replay.py: test_ledger_envtest.py's
# scenarios with the API server's audit log kept, then the expected reports.
# Needs a real kube-apiserver (KUBE_APISERVER) and etcd; without them it
# says so, leaves the recorded fixtures as they are and fails.
replay-fixtures: $(BUILD)/rel/dra-guard | deps-test
	$(Q)$(PYTHON) -c 'import sys; sys.path.insert(0, "tests/e2e"); import envtest; m = envtest.missing(); \
		m and sys.exit("make replay-fixtures records from a real API server: %s; set KUBE_APISERVER (a v1.36 kube-apiserver) and ETCD. tests/fixtures/replay/ is unchanged." % m)'
	$(Q)DRA_GUARD_RECORD_AUDIT=$(CURDIR)/tests/fixtures/replay $(PYTHON) tests/e2e/test_ledger_envtest.py
	$(Q)$(PYTHON) tests/e2e/test_replay.py --update

# Each mutant is one golden run with one rule broken; a survivor fails the
# check unless tests/golden/mutants-allowed.txt says why (V=1: every mutant).
mutation-check: $(BUILD)/mutant/tests/test_engine
	@$(PYTHON) tools/mutation_check.py $< tests/golden/mutants-allowed.txt $(if $(filter 1,$(V)),-v)

# --- fuzzing ----------------------------------------------------------------
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# policy/ is compiled once, instrumented for coverage, and linked into every target.
FUZZ_OBJ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_LIB_OBJ := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(POLICY_SRC))
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/,$(FUZZ_NAMES))
# The scanner's test walker (tests/jscan_walk.c) serves fuzz_jscan too, and
# the quantity helpers of the tests (tests/testquantity.c) fuzz_quantity.
FUZZ_SUPPORT_OBJ := $(BUILD)/fuzz/obj/tests/jscan_walk.o $(BUILD)/fuzz/obj/tests/testquantity.o

$(BUILD)/fuzz/obj/%.o: %.c | deps-fuzz
	$(call msg,CLANG,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(BASE_CPPFLAGS) $(PKG_CFLAGS) $(WARN) $(or $(INC),$(INC_other)) $(FUZZ_OBJ_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_OBJ) $(FUZZ_SUPPORT_OBJ) | deps-fuzz
	$(call msg,CLANG,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(BASE_CPPFLAGS) $(PKG_CFLAGS) $(WARN) $(INC_other) -Wno-unused-command-line-argument \
		$(FUZZ_FLAGS) -o $@ $< $(FUZZ_LIB_OBJ) $(FUZZ_SUPPORT_OBJ) $(PKG_LIBS)

# fuzz_review also starts from every golden case's review and the objects
# of tests/fixtures wrapped in reviews (tests/fuzz/review_seeds.py).
fuzz-seeds:
	@$(PYTHON) tests/fuzz/review_seeds.py $(BUILD)/fuzz-corpus/fuzz_review >/dev/null

.PHONY: fuzz-build
fuzz-build: $(FUZZ_BINS) fuzz-seeds

fuzz: fuzz-build
	@set -e; for f in $(FUZZ_NAMES); do tools/fuzz.sh $(BUILD)/fuzz/$$f $(FUZZ_SECONDS) full; done

# --- running ----------------------------------------------------------------
RUN_DIR := $(BUILD)/run
run: dra-guard
	@certs/make-certs.sh dev $(RUN_DIR)/certs
	./dra-guard serve --listen 127.0.0.1:8443 \
		--tls-cert $(RUN_DIR)/certs/tls.crt --tls-key $(RUN_DIR)/certs/tls.key \
		--policy examples/policy-configmap.yaml --metrics-listen 127.0.0.1:9090

# Knobs (DURATION, CONNS, SIZES, SCALE_THREADS, BENCH_COMPARE, ...): tools/bench.sh.
bench: $(BUILD)/release/dra-guard $(BUILD)/release/bench/bench_engine $(BUILD)/release/bench/bench_replay \
		$(BUILD)/release/bench/bench_view $(BUILD)/release/bench/bench_ledger $(BUILD)/release/bench/bench_hmap | deps-bench
	@BUILD=$(BUILD) tools/bench.sh

# BENCH_BASE=REV also runs the release of REV side by side (the base step).
bench-compare: $(BUILD)/release/dra-guard $(BUILD)/release/bench/bench_engine | deps-bench
	@BUILD=$(BUILD) tools/bench.sh compare $(if $(BENCH_BASE),base) report

# The release of BENCH_BASE (default: the last tag, else HEAD~1) against this tree's.
bench-base: $(BUILD)/release/dra-guard $(BUILD)/release/bench/bench_engine | deps-bench
	@BUILD=$(BUILD) tools/bench.sh base

# Loads ../shared/bench/scale's data set into the real API server first.
bench-scale: $(BUILD)/release/dra-guard $(BUILD)/release/bench/bench_view | deps-bench deps-test
	DRA_GUARD_BIN=$(abspath $(BUILD)/release/dra-guard) $(PYTHON) tools/bench_scale.py \
		--bench-view $(abspath $(BUILD)/release/bench/bench_view) --out $(BUILD)/bench-scale.json \
		--data $(abspath $(BUILD))/bench-scale-data $(BENCH_SCALE_ARGS)

SOAK_SECONDS ?= 600
soak: $(BUILD)/release/dra-guard | deps-bench
	@BUILD=$(BUILD) SOAK_SECONDS=$(SOAK_SECONDS) tools/soak.sh

# The image is built inside podman from the Dockerfile, not from $(BUILD);
# its storage and base image are kept in $(BUILD)/image between runs.
image: | deps-image
	@IMAGE_DIR=$(abspath $(BUILD))/image $(PYTHON) tools/run_tests.py e2e:tests/image/test_image_build.py

clean:
	rm -rf $(BUILD) dra-guard
