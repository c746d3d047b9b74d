# palisade - build, test, demo.  `make help` lists the targets.
#
# Everything built goes under $(O) (default build/); the binaries of the
# default build are also linked into bin/.  Several builds can coexist:
#   make O=build-asan SAN=1 test
.DEFAULT_GOAL := all
SHELL := /bin/bash

O       ?= build
CC      ?= cc
SAN     ?=
ifeq ($(O),build)
BIN     := bin
else
BIN     := $(O)/bin
endif

PKGS    := glib-2.0 libpq yaml-0.1 libcurl jansson libmicrohttpd libsystemd
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CPPFLAGS += -Iinclude -I/usr/include/zookeeper -DTHREADED -D_GNU_SOURCE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -fno-omit-frame-pointer
LDLIBS   += -lzookeeper_mt -lm -lpthread

ifeq ($(SAN),1)
CC       := clang-14
CFLAGS   += -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

# Library sources: every module except the programs' main files.
LIB_SRC  := $(filter-out src/cli/% src/sink/%,$(wildcard src/*/*.c))
CLI_SRC  := $(wildcard src/cli/*.c)
SINK_SRC := $(wildcard src/sink/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
ITEST_SRC := $(wildcard tests/integration/*.c)

SQL      := $(sort $(wildcard sql/[0-9]*.sql))
LIB_OBJ  := $(LIB_SRC:%.c=$(O)/%.o) $(O)/gen/migrations.o
CLI_OBJ  := $(CLI_SRC:%.c=$(O)/%.o)
SINK_OBJ := $(SINK_SRC:%.c=$(O)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
ITEST_BIN := $(ITEST_SRC:tests/integration/%.c=$(O)/itests/%)
LIBPAL   := $(O)/libpalisade.a

PROGS := $(BIN)/palisade
ifneq ($(SINK_SRC),)
PROGS += $(BIN)/palisade-sink
endif

.PHONY: all deps test unit integration asan bench demo clean format lint help reference fuzz docs man

all: $(O)/.deps $(PROGS) $(UNIT_BIN) $(ITEST_BIN)

help:
	@echo "make            build bin/palisade (and the unit tests)"
	@echo "make test       unit + integration tests (starts its own PostgreSQL/ZooKeeper)"
	@echo "make asan       the same suite under ASan + UBSan (clang-14)"
	@echo "make demo       dev cluster up, migrate, apply config/jobs, show next instants"
	@echo "make reference  compare 'cron next' with croniter and zdump on many cases"
	@echo "make fuzz       run the libFuzzer targets for a short while"
	@echo "make bench      benchmarks"
	@echo "make man        man pages (scdoc) into $(O)/man"
	@echo "make format | lint | clean"

# Installs missing Debian packages (ops/deps.sh); re-checked when the list changes.
$(O)/.deps: ops/deps.sh
	@mkdir -p $(O)
	@bash ops/deps.sh
	@touch $@

deps:
	@bash ops/deps.sh

$(O)/%.o: %.c $(O)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(O)/gen/migrations.c: $(SQL) ops/embed-sql.sh
	@mkdir -p $(dir $@)
	bash ops/embed-sql.sh $@ $(SQL)

$(O)/gen/%.o: $(O)/gen/%.c $(O)/.deps
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -c -o $@ $<

$(LIBPAL): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN)/palisade: $(CLI_OBJ) $(LIBPAL)
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIBPAL) $(PKG_LIBS) $(LDLIBS)

$(BIN)/palisade-sink: $(SINK_OBJ) $(LIBPAL)
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $(SINK_OBJ) $(LIBPAL) $(PKG_LIBS) $(LDLIBS)

$(O)/tests/%: tests/unit/%.c $(LIBPAL)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(LIBPAL) $(PKG_LIBS) -lcmocka $(LDLIBS) $(LDFLAGS)

# Integration test programs (C) that drive real servers; run by tests/integration/*.sh.
$(O)/itests/%: tests/integration/%.c $(LIBPAL)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(LIBPAL) $(PKG_LIBS) $(LDLIBS) $(LDFLAGS)

unit: all
	@bash tests/run-unit.sh $(O)

integration: all
	@PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) bash tests/integration/run.sh

REFERENCE ?= 1
test: all
	@bash tests/run-unit.sh $(O)
	@if [ "$(REFERENCE)" = 1 ]; then python3 tests/reference/cron_reference.py --bin $(BIN)/palisade; fi
	@PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) bash tests/integration/run.sh

# The same suite under ASan + UBSan; the long load test runs 45 s instead of
# 180 s, and the cron reference comparison (process-heavy, same engine as the
# unit tests) runs in `make test` only.
# detect_stack_use_after_return: a pointer to a returned frame kept for a
# later pass (the executor's batched commits) is caught at once instead of
# writing whatever the stack holds by then.
asan:
	ASAN_OPTIONS=detect_stack_use_after_return=1:$(ASAN_OPTIONS) $(MAKE) O=build-asan SAN=1 LOAD_SECONDS=45 REFERENCE=0 test

reference: all
	@python3 tests/reference/cron_reference.py --bin $(BIN)/palisade

fuzz:
	@bash tests/fuzz/run.sh

bench: all
	@bash ops/deps.sh --bench || echo "make bench: could not install wrk; the HTTP ceiling will be missing"
	@bash tests/bench/run.sh $(BIN)

demo: all
	@bash ops/demo.sh $(BIN)

MAN_SRC := $(wildcard docs/man/*.scd)
man: $(MAN_SRC:docs/man/%.scd=$(O)/man/%)
$(O)/man/%: docs/man/%.scd
	@mkdir -p $(dir $@)
	scdoc < $< > $@

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		--suppress=unknownMacro --suppress=missingIncludeSystem \
		-Iinclude -I/usr/include/zookeeper -DTHREADED src

clean:
	rm -rf build build-* bin

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(SINK_OBJ:.o=.d)
