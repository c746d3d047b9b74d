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
SQL_OBJECTS := $(sort $(wildcard sql/functions/*.sql))
SINK_SQL := $(sort $(wildcard sql/sink/[0-9]*.sql))
SINK_SQL_OBJECTS := $(sort $(wildcard sql/sink/functions/*.sql))
LIB_OBJ  := $(LIB_SRC:%.c=$(O)/%.o) $(O)/gen/migrations.o $(O)/gen/openapi.o
CLI_OBJ  := $(CLI_SRC:%.c=$(O)/%.o)
SINK_OBJ := $(SINK_SRC:%.c=$(O)/%.o) $(O)/gen/sink_schema.o
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
ITEST_BIN := $(ITEST_SRC:tests/integration/%.c=$(O)/itests/%)
LIBPAL   := $(O)/libpalisade.a

PROGS := $(BIN)/palisade
ifneq ($(SINK_SRC),)
PROGS += $(BIN)/palisade-sink
endif

.PHONY: all deps test unit integration asan chaos bench demo clean format lint help reference fuzz docs man \
	install uninstall check-install check-units check-runner check-openapi check-state-writers \
	check-dashboard

# Plain `make` only builds: ops/deps.sh --check names the missing packages
# and the one command that installs them.  The goals that run things (test,
# demo, deps, ...) install what they need first, so a fresh machine needs
# nothing but `make test` or `make demo`.
INSTALL_GOALS := deps test unit integration asan chaos bench demo reference fuzz
INSTALL_DEPS  := $(if $(filter $(INSTALL_GOALS),$(MAKECMDGOALS)),1,)
DEPS_STAMP    := $(O)/.deps$(if $(INSTALL_DEPS),-all,-build)
HAVE_SCDOC    := $(shell command -v scdoc 2>/dev/null)

all: $(DEPS_STAMP) $(PROGS) $(UNIT_BIN) $(ITEST_BIN) $(if $(HAVE_SCDOC),man)

help:
	@echo "make            build bin/palisade (and the unit tests)"
	@echo "make test       unit + integration tests (starts its own PostgreSQL/ZooKeeper)"
	@echo "make asan       unit + selected integration tests under ASan + UBSan (ASAN_SKIP=: all)"
	@echo "make chaos      every fault drill (chaos/run.sh), long variants"
	@echo "make demo       dev cluster up, migrate, apply config/jobs, show next instants"
	@echo "make reference  compare 'cron next' with croniter and zdump on many cases"
	@echo "make fuzz       run the libFuzzer targets for a short while"
	@echo "make bench      benchmarks"
	@echo "make man        man pages (scdoc) into $(O)/man"
	@echo "make install    PREFIX=/usr/local DESTDIR=: binaries, man pages, units, config, SQL, rules"
	@echo "make uninstall  remove what make install put there (same PREFIX/DESTDIR)"
	@echo "make deps       install the Debian packages of build, test and demo (ops/deps.sh)"
	@echo "make format | lint | clean"

# The build packages are checked (plain make) or every package installed
# (the goals above); re-done when the list changes.
$(O)/.deps-build: ops/deps.sh
	@mkdir -p $(O)
	@bash ops/deps.sh --check
	@touch $@

$(O)/.deps-all: ops/deps.sh
	@mkdir -p $(O)
	@bash ops/deps.sh
	@touch $@ $(O)/.deps-build

deps:
	@bash ops/deps.sh

$(O)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The list of migrations and functions as a file that changes only when
# the list does: a file removed (or renamed) rebuilds the embedded set,
# which a dependency on the files alone never notices.
$(O)/gen/sql.list: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SQL) -- $(SQL_OBJECTS)' | cmp -s - $@ 2>/dev/null || echo '$(SQL) -- $(SQL_OBJECTS)' >$@

$(O)/gen/migrations.c: $(SQL) $(SQL_OBJECTS) $(O)/gen/sql.list ops/embed-sql.sh
	@mkdir -p $(dir $@)
	bash ops/embed-sql.sh $@ pal $(SQL) -- $(SQL_OBJECTS)

# The sink's own schema (sql/sink/), by the same generator.
$(O)/gen/sink_sql.list: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SINK_SQL) -- $(SINK_SQL_OBJECTS)' | cmp -s - $@ 2>/dev/null || echo '$(SINK_SQL) -- $(SINK_SQL_OBJECTS)' >$@

$(O)/gen/sink_schema.c: $(SINK_SQL) $(SINK_SQL_OBJECTS) $(O)/gen/sink_sql.list ops/embed-sql.sh
	@mkdir -p $(dir $@)
	bash ops/embed-sql.sh $@ pal_sink $(SINK_SQL) -- $(SINK_SQL_OBJECTS)

# The API's OpenAPI document, served at /api/v1/openapi.json (docs/api.md).
$(O)/gen/openapi.c: docs/api/openapi.json ops/embed-file.sh
	@mkdir -p $(dir $@)
	bash ops/embed-file.sh $@ pal_api_openapi docs/api/openapi.json

$(O)/gen/%.o: $(O)/gen/%.c | $(DEPS_STAMP)
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
	@PALISADE_IT_JOBS=$${PALISADE_IT_JOBS:-$(IT_JOBS)} PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) bash tests/integration/run.sh

REFERENCE ?= 1
# The checks of the tree after the tests (install, units, runner, OpenAPI,
# state writers, dashboard, lint) read the sources and the harness, not the
# sanitized code: `make asan` leaves them to `make test` (CHECKS=0).
CHECKS ?= 1
# The load of the controller fault test (kill -9, SIGSTOP, drain under 200
# jobs): 60 s in `make test`, the full 180 s in `make chaos`.  Only that
# test reads it (test_pgbouncer has its own 20 s window, PGB_LOAD_SECONDS).
LOAD_SECONDS ?= 60
# How many shared integration tests run at a time (PALISADE_IT_JOBS, which
# overrides it): four in `make test`; three under ASan, where four on a
# loaded box failed a test whose end fell too late after its apply
# (docs/testing.md, "The CI budget").
IT_JOBS ?= 4
test: all
	@bash tests/run-unit.sh $(O)
	@if [ "$(REFERENCE)" = 1 ]; then python3 tests/reference/cron_reference.py --bin $(BIN)/palisade; fi
	@python3 tests/reference/import_reference.py --bin $(BIN)/palisade
	@LOAD_SECONDS=$(LOAD_SECONDS) PALISADE_IT_JOBS=$${PALISADE_IT_JOBS:-$(IT_JOBS)} PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) bash tests/integration/run.sh
	@if [ "$(CHECKS)" = 1 ]; then $(MAKE) --no-print-directory check-install check-units check-runner \
		check-openapi check-state-writers check-dashboard lint; fi

# Every fault drill (chaos/run.sh), each with its verdict line and JSON
# report; the long variants: 180 s of load in the controller fault drill,
# the shadow/cut-over path at an operator's pace (shadow-cutover-long),
# a 20-minute random drill, then a 10-minute random drill with PostgreSQL
# under Patroni (--pg ha: pg-failover in the nemesis's menu); both always
# run, the target fails when either does (chaos/README.md).
chaos: all
	@bash ops/deps.sh --chaos || echo "make chaos: could not install patroni; the PostgreSQL failover drills will fail"
	@rc=0; \
	LOAD_SECONDS=180 RANDOM_MINUTES=20 PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) bash chaos/run.sh || rc=1; \
	PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) bash chaos/run.sh random --minutes 10 --pg ha || rc=1; \
	exit $$rc

# Under ASan + UBSan: every unit test, and the integration tests of CI's
# selection: a weighted greedy set cover of the lines of src/ the whole
# suite runs, from a gcov run of the suite with each test's counts apart
# (tests/asan-select.sh prints the table, the steps and this line;
# docs/testing.md, "What runs under ASan").  Each step takes the test that
# adds the most lines not yet run (by the unit tests and the tests taken
# before it) per second of its CI cost (its length, a third of it for a
# shared test, all of it for one in IT_SERIAL); the steps end where the
# next test would add fewer than 2 lines per second (ASAN_SELECT_RATE=2:
# 56 tests running 28,315 of the 29,511 lines the suite runs; the full
# cover takes 134 tests and about 570 s more of CI than the budget has).
# ASAN_SKIP names the tests it leaves out.  A test added since the last
# run of the script runs under ASan until it names it.
# `make asan ASAN_SKIP=` runs the whole suite under ASan (the controller
# fault test then runs 45 s of load instead of 60 s).  The cron reference
# comparison (process-heavy, same engine as the unit tests) runs in
# `make test` only.
# detect_stack_use_after_return: a pointer to a returned frame kept for a
# later pass (the executor's batched commits) is caught at once instead of
# writing whatever the stack holds by then.
ASAN_SKIP := test_admin_tls test_after test_after_activation test_after_backfill_partition \
	test_after_backfill_undecided test_after_chain test_after_fanin_held \
	test_after_finished_cancel test_after_manual test_after_manual_upstream_below_wm \
	test_after_manual_upstream_pending test_after_misfire_once test_after_nominal \
	test_after_old_node test_after_quarantine test_after_retire test_after_shadow \
	test_after_version_switch test_api_bounds test_api_cli_balancer_prune \
	test_api_repeated_arg test_api_unknown_fields test_api_version_header \
	test_apply_move_tenant test_apply_scale test_apply_tenant_move_ahead \
	test_apply_tenant_move_race test_apply_tenant_shadow_move test_backfill_guard \
	test_backfill_request_id_retention test_boundary_nominal test_calendar_followers \
	test_calendar_oneshot test_calendars test_calendars_old_node test_claim_many_jobs \
	test_claim_probes test_claim_scans test_claim_stale_stats test_clock_skew test_commit_plan \
	test_console test_console_act test_console_many_jobs test_console_next_pending \
	test_console_scale test_controller_cold_start test_controller_drain_resign \
	test_controller_faults test_controller_handoff test_controller_misfire \
	test_controller_sqlwords test_controller_takeover_decided test_coord \
	test_executor_bad_responses test_executor_cancelling_expired test_executor_clock_skew \
	test_executor_fairness test_executor_fence_floor test_executor_host_connections \
	test_executor_overlap test_executor_pause test_executor_pause_backlog test_executor_race \
	test_executor_resend test_executor_spec_transient test_executor_stale test_honest_outcomes \
	test_idem_5xx_committed test_idem_answer_lost test_import_clusters \
	test_import_crontab_files test_import_move test_import_prune_prefix \
	test_import_quartz_prefix test_job_ref test_job_ref_unfilled test_jobs_next_pending \
	test_leftout_version_oneshot test_lifecycle test_listener_limits test_lock_order \
	test_manual_key test_metrics test_migrate_after_roll test_migrate_contract \
	test_mixed_upgrade test_new_job_deferred_late test_new_job_leader_change \
	test_new_job_lookahead test_new_job_partitions_cap test_new_job_row_cap test_node_id_busy \
	test_node_reload test_notify test_notify_expiry test_notify_latest_receiver \
	test_notify_partition test_notify_readd test_notify_rule_lock_order \
	test_notify_rule_recovered test_notify_rule_removed test_notify_rule_swap \
	test_notify_shadow test_notify_slow_receiver test_notify_v1_success \
	test_oneshot_switch_down_from test_oneshot_switch_down_to test_oneshot_switch_misfire \
	test_outage test_outage_long test_partition test_pgbouncer test_pgbouncer_job_ref \
	test_pgbouncer_migrate test_reapply test_reapply_at_moved test_reapply_end_reached \
	test_reapply_newer test_reapply_race test_reapply_retired_race test_reapply_rounds \
	test_reapply_unactivated_stop test_request_id_retention test_rerun_unknown \
	test_resume_backlog test_resume_overlap test_resume_ramp test_resume_ramp_again \
	test_resume_ticket_partial test_retention test_retention_after test_retention_gives_way \
	test_retention_verify_hole test_rollback_after_flight test_rollback_after_late \
	test_rollback_ahead test_rollback_brake_unread test_rollback_job_step test_rollback_resume \
	test_rolling_upgrade test_schedule_forms test_schedule_forms_old_controller \
	test_secrets_tenant test_shadow_cutover test_shadow_end_past test_shadow_live \
	test_shadow_moved_after test_shadow_oneshot_moved test_shadow_retired_cut \
	test_shadow_retired_reapplied test_sink test_sink_group test_sql_functions \
	test_stop_live_holder test_stop_unknown test_systemd_notify test_takeover_old_apply \
	test_target_hosts_busy_node test_target_hosts_busy_old_node \
	test_target_hosts_fixed_version test_target_hosts_nowhere test_target_hosts_roll \
	test_trace_context test_trigger_door test_trigger_guard test_trigger_held_by_done \
	test_trigger_held_by_group test_trigger_paused test_trigger_reads test_trigger_scan_scale \
	test_verify_gap
asan:
	ASAN_OPTIONS=detect_stack_use_after_return=1:$(ASAN_OPTIONS) PALISADE_IT_SKIP="$(ASAN_SKIP)" \
		$(MAKE) O=build-asan SAN=1 LOAD_SECONDS=45 IT_JOBS=3 REFERENCE=0 CHECKS=0 test

reference: all
	@python3 tests/reference/cron_reference.py --bin $(BIN)/palisade

fuzz:
	@bash tests/fuzz/run.sh

bench: all
	@bash ops/deps.sh --bench || echo "make bench: could not install wrk; the HTTP ceiling will be missing"
	@bash tests/bench/run.sh $(BIN)

demo: all
	@bash ops/demo.sh $(BIN)

# Man pages: docs/man/*.scd as they are; *.scd.in get their key tables
# from docs/config.md and docs/jobs.md (ops/man-tables.py), so the pages
# and the docs cannot disagree.
MAN_SRC := $(wildcard docs/man/*.scd) $(patsubst %.in,%,$(wildcard docs/man/*.scd.in))
JOB_TABLES := '\#\#\# Job' '\#\#\# `schedule`' '\#\#\# `after`' '\#\#\# `misfire`' '\#\#\# `target`' '\#\#\# `notify`' \
	'\#\#\# `retry` and `retry.backoff`' '\#\# Templates'
man: $(MAN_SRC:docs/man/%.scd=$(O)/man/%)
$(O)/man/%: docs/man/%.scd
	@mkdir -p $(dir $@)
	scdoc < $< > $@
$(O)/man/%: $(O)/man/%.scd
	scdoc < $< > $@
$(O)/man/palisade.yaml.5.scd: docs/man/palisade.yaml.5.scd.in docs/config.md ops/man-tables.py
	@mkdir -p $(dir $@)
	python3 ops/man-tables.py config docs/config.md >$@.tables
	sed -e '/@TABLES@/{r $@.tables' -e 'd}' $< >$@ && rm -f $@.tables
$(O)/man/palisade-jobs.5.scd: docs/man/palisade-jobs.5.scd.in docs/jobs.md ops/man-tables.py
	@mkdir -p $(dir $@)
	python3 ops/man-tables.py jobs docs/jobs.md $(JOB_TABLES) >$@.tables
	sed -e '/@TABLES@/{r $@.tables' -e 'd}' $< >$@ && rm -f $@.tables

# ---- install -----------------------------------------------------------------
# make install PREFIX=/usr DESTDIR=/tmp/pkg ; the config directory is /etc
# under PREFIX=/usr, else $(PREFIX)/etc.  Units name the installed paths.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/palisade
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
UNITS      := $(wildcard ops/systemd/*.service)
RULES      := $(wildcard ops/prometheus/*.yml)
DASHBOARDS := $(wildcard ops/grafana/*.json)
MAN_OUT     = $(MAN_SRC:docs/man/%.scd=$(O)/man/%)

install: $(PROGS) $(if $(HAVE_SCDOC),man)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(DATADIR)/sql $(DESTDIR)$(DATADIR)/prometheus $(DESTDIR)$(DATADIR)/grafana \
		$(DESTDIR)$(SYSCONFDIR)/palisade
	install -m 0755 $(PROGS) $(DESTDIR)$(BINDIR)/
	@for u in $(UNITS); do \
		sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/palisade|$(SYSCONFDIR)/palisade|g' $$u \
			>$(DESTDIR)$(UNITDIR)/$$(basename $$u) && chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u); \
		echo "install $$u -> $(DESTDIR)$(UNITDIR)/"; done
	install -m 0644 ops/sysusers/palisade.conf $(DESTDIR)$(SYSUSERSDIR)/palisade.conf
	install -m 0644 $(SQL) $(DESTDIR)$(DATADIR)/sql/
	install -d $(DESTDIR)$(DATADIR)/sql/functions
	install -m 0644 $(SQL_OBJECTS) $(DESTDIR)$(DATADIR)/sql/functions/
	$(if $(RULES),install -m 0644 $(RULES) $(DESTDIR)$(DATADIR)/prometheus/)
	$(if $(DASHBOARDS),install -m 0644 $(DASHBOARDS) $(DESTDIR)$(DATADIR)/grafana/)
	install -m 0644 config/palisade.yaml $(DESTDIR)$(DATADIR)/palisade.yaml.example
	@# the live config is never overwritten
	test -e $(DESTDIR)$(SYSCONFDIR)/palisade/palisade.yaml || \
		install -m 0640 config/palisade.yaml $(DESTDIR)$(SYSCONFDIR)/palisade/palisade.yaml
	@if [ -n "$(HAVE_SCDOC)" ]; then for m in $(MAN_OUT); do s=$${m##*.}; \
		install -d $(DESTDIR)$(MANDIR)/man$$s && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/ && \
		echo "install $$m -> $(DESTDIR)$(MANDIR)/man$$s/"; done; \
	else echo "make install: scdoc missing, no man pages (apt-get install scdoc)"; fi

# Removes what install put there; the live config in SYSCONFDIR stays.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(PROGS)))
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNITS))) $(DESTDIR)$(SYSUSERSDIR)/palisade.conf
	rm -f $(foreach m,$(MAN_SRC:docs/man/%.scd=%),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m))
	rm -rf $(DESTDIR)$(DATADIR)
	@echo "make uninstall: kept $(DESTDIR)$(SYSCONFDIR)/palisade (configuration, tokens)"

# Every query of the Grafana dashboard (and of the Prometheus rules) names a
# series the node or the sink declares in src/ or a recording rule; a copy
# of the dashboard with one metric misspelt must be refused.
check-dashboard:
	@python3 tests/ops/dashboard_metrics.py
	@d=$$(mktemp -d) && trap 'rm -rf $$d' EXIT && \
	sed 's/palisade_executor_leases_lost_total/palisade_executor_leases_lost_totl/' \
		ops/grafana/palisade.json >$$d/bad.json && \
	if python3 tests/ops/dashboard_metrics.py $$d/bad.json 2>$$d/err; then \
		echo "check-dashboard: a panel naming an unknown metric passed"; exit 1; \
	elif grep -q "'Lease losses'.*palisade_executor_leases_lost_totl is neither" $$d/err; then \
		echo "check-dashboard: a panel naming an unknown metric is refused"; \
	else cat $$d/err; echo "check-dashboard: the misspelt metric was not named"; exit 1; fi

# make install into an empty DESTDIR gives a tree that runs.
check-install: $(PROGS)
	@d=$$(mktemp -d) && trap 'rm -rf $$d' EXIT && \
	$(MAKE) --no-print-directory install DESTDIR=$$d >/dev/null && \
	v=$$($$d/usr/local/bin/palisade --version) && \
	test -s $$d/usr/local/share/palisade/grafana/palisade.json && \
	$$d/usr/local/bin/palisade-sink --help >/dev/null && \
	echo "check-install: make install DESTDIR=$$d gives a tree that runs ($$v)"

# The integration runner fails a run whose test fails (once a runner took
# $$? after a command substitution and counted every failed test passed),
# and a test whose query fails (sql records it; the check it fed passes).
check-runner: $(PROGS)
	@out=$$(PALISADE_BIN=$(abspath $(BIN)) PALISADE_ITESTS=$(abspath $(O)/itests) \
		bash tests/integration/run.sh tests/integration/selfcheck/test_fails.sh \
		tests/integration/selfcheck/sql_fails.sh 2>&1); rc=$$?; \
	if [ $$rc -ne 0 ] && echo "$$out" | grep -q "2 tests, 2 failed test_fails sql_fails"; then \
		echo "check-runner: a failing test fails the integration run"; \
		echo "check-runner: a query that fails fails its test (the check it fed passed on the empty output)"; \
	else echo "$$out" | tail -8; echo "check-runner: a failing test or query did not fail the run (exit $$rc)"; exit 1; fi
	@out=$$(bash tests/integration/selfcheck/scope.sh 2>&1) && \
		echo "check-runner: the wait and check helpers leave their callers' variables alone" || \
		{ echo "$$out"; echo "check-runner: a helper's local shadows its caller's (tests/integration/selfcheck/scope.sh)"; exit 1; }

# The OpenAPI document of /api/v1 is linted (@redocly/cli, installed into
# build/node by ops/deps.sh); the contract test (test_api_contract.sh) checks
# that the node answers as it says.
check-openapi:
	@REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		build/node/node_modules/.bin/redocly lint --format=summary docs/api/openapi.json && \
		echo "check-openapi: docs/api/openapi.json is valid OpenAPI 3.1 (redocly lint)"

# Every statement that writes triggers.state, against the list of those
# that predate the one door (tests/state_writers.py says the rule).
check-state-writers:
	@python3 tests/state_writers.py

# systemd-analyze verify on the units as installed (their binaries exist).
check-units: $(PROGS)
	@d=$$(mktemp -d) && trap 'rm -rf $$d' EXIT && \
	$(MAKE) --no-print-directory install PREFIX=$$d >/dev/null && \
	systemd-analyze verify --man=no $$d/lib/systemd/system/*.service && \
	echo "check-units: systemd-analyze verify clean"

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		--suppress=unknownMacro --suppress=missingIncludeSystem \
		-Iinclude -I/usr/include/zookeeper -DTHREADED src

clean:
	rm -rf build build-* bin

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(SINK_OBJ:.o=.d)

.PHONY: FORCE
FORCE:
