# dra-guard - one non-recursive Makefile.
#
#   make deps    install missing Debian packages (every build target runs it)
#   make         build ./dra-guard
#   make test    unit tests (plain and ASan+UBSan), end-to-end tests, fuzz smoke
#   make run     the webhook on localhost with dev certificates and the example policy
#   make bench   benchmarks (engine, end to end, scaling, profile); BENCH_COMPARE=1
#                or `make bench-compare` also runs them against the Go peers
#   make fuzz    libFuzzer targets, FUZZ_SECONDS each
#   make soak    the server under load for SOAK_SECONDS, sampling RSS and fds
#   make clean
#
# Objects go to $(BUILD)/<flavour>/: "rel" (-O2) and "asan" (ASan + UBSan).
# policy/*.c make libpolicy.a, webhook/*.c (but main.c) libwebhook.a;
# webhook/main.c is the program; tests/test_<module>.c is one cmocka binary per
# module.

.SUFFIXES:
.SECONDARY:
.DEFAULT_GOAL := all
SHELL := /bin/sh

BUILD ?= build
CC ?= cc
CLANG ?= clang
PKG_CONFIG ?= pkg-config
PYTHON ?= python3
PKGS := libmicrohttpd gnutls jansson yaml-0.1 libcrypto

VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

WARN := -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
BASE_CPPFLAGS := -D_GNU_SOURCE -Ipolicy -Iwebhook -DDRA_GUARD_VERSION='"$(VERSION)"'
# Deferred (=): evaluated when a recipe runs, after `deps` installed pkg-config data.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS))
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS)) -lpthread
CMOCKA_LIBS = $(shell $(PKG_CONFIG) --libs cmocka)

# The release flavour is optimised with the profile of a training run
# (profile-guided optimisation: about 30% less CPU per review than plain
# -O3, see README Performance). pgogen is the instrumented build that runs
# the training (bench/pgo_train.c on tools/pgo_corpus.py's reviews); rel is
# rebuilt from its profile. PGO=0 builds rel without one.
PGO ?= 1
PGO_DATA := $(abspath $(BUILD))/pgo-data
OPT_CFLAGS := -O3 -g -fno-strict-aliasing -flto=auto
# Objects are compiled with -dumpbase SOURCE, so a function's profile is
# named after its source file, not after the object's build directory: the
# profile the pgogen objects write is the one the rel objects read.
pgogen_CFLAGS := $(OPT_CFLAGS) -fprofile-generate=$(PGO_DATA)
ifeq ($(PGO),1)
rel_CFLAGS := $(OPT_CFLAGS) -fprofile-use=$(PGO_DATA) -fprofile-partial-training -Wno-missing-profile
rel_OBJ_DEPS := $(PGO_DATA)/.trained
else
rel_CFLAGS := $(OPT_CFLAGS)
endif
asan_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FLAVOURS := rel asan pgogen

POLICY_SRC := $(sort $(wildcard policy/*.c))
WEBHOOK_SRC := $(sort $(filter-out webhook/main.c,$(wildcard webhook/*.c)))
LIB_SRC := $(POLICY_SRC) $(WEBHOOK_SRC)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_NAMES := $(patsubst tests/%.c,%,$(TEST_SRC))
TEST_SUPPORT_SRC := $(sort $(filter-out tests/test_%.c,$(wildcard tests/*.c)))
BENCH_SRC := $(sort $(wildcard bench/*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRC))

.PHONY: all deps deps-test deps-bench deps-fuzz test unit-test e2e-test fuzz-smoke \
	run bench bench-compare fuzz fuzz-seeds soak clean

all: dra-guard

deps:
	@tools/deps.sh build
deps-test:
	@tools/deps.sh build test
deps-bench:
	@tools/deps.sh build bench
deps-fuzz:
	@tools/deps.sh build fuzz

dra-guard: $(BUILD)/rel/dra-guard
	cp $< $@

# --- per-flavour rules ------------------------------------------------------
# libpolicy.a is the pure half, libwebhook.a the I/O half; a test of a policy/
# module links only the former, so the arrow webhook -> policy is checked by
# the linker too.
.SECONDEXPANSION:
define flavour_rules
$(1)_POLICY_OBJ := $$(patsubst %.c,$(BUILD)/$(1)/%.o,$(POLICY_SRC))
$(1)_WEBHOOK_OBJ := $$(patsubst %.c,$(BUILD)/$(1)/%.o,$(WEBHOOK_SRC))
$(1)_SUPPORT_OBJ := $$(patsubst %.c,$(BUILD)/$(1)/%.o,$(TEST_SUPPORT_SRC))

$(BUILD)/$(1)/%.o: %.c $$($(1)_OBJ_DEPS) | deps
	@mkdir -p $$(@D)
	$$(CC) $$(BASE_CPPFLAGS) $$(PKG_CFLAGS) $$(WARN) $$($(1)_CFLAGS) -dumpbase $$< -MMD -MP -c -o $$@ $$<

$(BUILD)/$(1)/libpolicy.a: $$($(1)_POLICY_OBJ)
	@rm -f $$@
	ar rcs $$@ $$^

$(BUILD)/$(1)/libwebhook.a: $$($(1)_WEBHOOK_OBJ)
	@rm -f $$@
	ar rcs $$@ $$^

$(BUILD)/$(1)/dra-guard: $(BUILD)/$(1)/webhook/main.o $(BUILD)/$(1)/libwebhook.a $(BUILD)/$(1)/libpolicy.a
	$$(CC) $$(WARN) $$($(1)_CFLAGS) -o $$@ $$^ $$(PKG_LIBS)

$(BUILD)/$(1)/tests/test_%: $(BUILD)/$(1)/tests/test_%.o $$($(1)_SUPPORT_OBJ) \
		$$$$(if $$$$(wildcard webhook/$$$$*.c),$(BUILD)/$(1)/libwebhook.a) $(BUILD)/$(1)/libpolicy.a | deps-test
	$$(CC) $$(WARN) $$($(1)_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) $$(PKG_LIBS)
endef
$(foreach f,$(FLAVOURS),$(eval $(call flavour_rules,$(f))))

$(BUILD)/rel/bench/%: $(BUILD)/rel/bench/%.o $(BUILD)/rel/libwebhook.a $(BUILD)/rel/libpolicy.a
	$(CC) $(WARN) $(rel_CFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/pgogen/bench/%: $(BUILD)/pgogen/bench/%.o $(BUILD)/pgogen/libwebhook.a $(BUILD)/pgogen/libpolicy.a
	$(CC) $(WARN) $(pgogen_CFLAGS) -o $@ $^ $(PKG_LIBS)

# The training run: every golden review and the large slice updates, under
# the built-in and a strict policy, on both endpoints.
$(PGO_DATA)/.trained: $(BUILD)/pgogen/bench/pgo_train tools/pgo_corpus.py $(wildcard tests/golden/cases/*.json)
	@rm -rf $(PGO_DATA) $(BUILD)/pgo-corpus
	@mkdir -p $(PGO_DATA)
	$(PYTHON) tools/pgo_corpus.py $(BUILD)/pgo-corpus
	$(BUILD)/pgogen/bench/pgo_train - tests/golden/policies/strict.yaml -- $(BUILD)/pgo-corpus/*.json
	@touch $@

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# --- tests ------------------------------------------------------------------
# rel and asan only: a pgogen test run would write its own counts into the
# training profile that rel is built from.
UNIT_FLAVOURS := rel asan
UNIT_BINS := $(foreach f,$(UNIT_FLAVOURS),$(addprefix $(BUILD)/$(f)/tests/,$(TEST_NAMES)))
export ASAN_OPTIONS := detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
# Tests find fixtures relative to the repository root.
export DRA_GUARD_ROOT := $(CURDIR)
export DRA_GUARD_SHARED := $(abspath $(CURDIR)/../shared)

test: unit-test e2e-test fuzz-smoke

unit-test: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

E2E_TESTS := $(sort $(wildcard tests/e2e/test_*.py))
e2e-test: $(BUILD)/rel/dra-guard $(BUILD)/asan/dra-guard | deps-test
	@set -e; for t in $(E2E_TESTS); do echo "== $$t"; \
		DRA_GUARD_BIN=$(abspath $(BUILD)/rel/dra-guard) \
		DRA_GUARD_ASAN_BIN=$(abspath $(BUILD)/asan/dra-guard) \
		$(PYTHON) $$t; done

# --- fuzzing ----------------------------------------------------------------
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 6
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# policy/ is compiled once, instrumented for coverage, and linked into every target.
FUZZ_OBJ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_LIB_SRC := $(POLICY_SRC)
FUZZ_LIB_OBJ := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_LIB_SRC))
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/,$(FUZZ_NAMES))
# The scanner's test walker (tests/jscan_walk.c) serves fuzz_jscan too.
FUZZ_SUPPORT_OBJ := $(BUILD)/fuzz/obj/tests/jscan_walk.o

$(BUILD)/fuzz/obj/%.o: %.c | deps-fuzz
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CPPFLAGS) $(PKG_CFLAGS) $(WARN) $(FUZZ_OBJ_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_OBJ) $(FUZZ_SUPPORT_OBJ) | deps-fuzz
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CPPFLAGS) $(PKG_CFLAGS) $(WARN) -Wno-unused-command-line-argument \
		$(FUZZ_FLAGS) -o $@ $< $(FUZZ_LIB_OBJ) $(FUZZ_SUPPORT_OBJ) $(PKG_LIBS)

# fuzz_review also starts from every golden case's review and the real objects
# in ../shared/fixtures/real wrapped in reviews (tests/fuzz/review_seeds.py).
fuzz-seeds:
	@$(PYTHON) tests/fuzz/review_seeds.py $(BUILD)/fuzz-corpus/fuzz_review >/dev/null

fuzz-smoke: $(FUZZ_BINS) fuzz-seeds
	@set -e; for f in $(FUZZ_NAMES); do tools/fuzz.sh $(BUILD)/fuzz/$$f $(FUZZ_SMOKE_SECONDS) smoke; done

fuzz: $(FUZZ_BINS) fuzz-seeds
	@set -e; for f in $(FUZZ_NAMES); do tools/fuzz.sh $(BUILD)/fuzz/$$f $(FUZZ_SECONDS) full; done

# --- running ----------------------------------------------------------------
RUN_DIR := $(BUILD)/run
run: $(BUILD)/rel/dra-guard
	@certs/make-certs.sh dev $(RUN_DIR)/certs
	$(BUILD)/rel/dra-guard serve --listen 127.0.0.1:8443 \
		--tls-cert $(RUN_DIR)/certs/tls.crt --tls-key $(RUN_DIR)/certs/tls.key \
		--policy examples/policy-configmap.yaml --metrics-listen 127.0.0.1:9090

# Knobs (DURATION, CONNS, SIZES, SCALE_THREADS, BENCH_COMPARE, ...): tools/bench.sh.
bench: $(BUILD)/rel/dra-guard $(BUILD)/rel/bench/bench_engine | deps-bench
	@BUILD=$(BUILD) tools/bench.sh

bench-compare: $(BUILD)/rel/dra-guard $(BUILD)/rel/bench/bench_engine | deps-bench
	@BUILD=$(BUILD) tools/bench.sh compare report

SOAK_SECONDS ?= 600
soak: $(BUILD)/rel/dra-guard | deps-bench
	@BUILD=$(BUILD) SOAK_SECONDS=$(SOAK_SECONDS) tools/soak.sh

clean:
	rm -rf $(BUILD) dra-guard
