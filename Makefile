# ticketrush: `make run` sets everything up and runs the service; `make test` runs every test;
# `make stop` stops what they started; `make help` lists the targets (from their `## target:` comments).
SHELL := /bin/bash
GO ?= go
export JWT_SECRET ?= dev-jwt-secret-change-me-0123456789abcdef
export QUEUE_TOKEN_SECRET ?= dev-queue-secret-change-me-0123456789abc
export ADMIN_TOKEN ?= dev-admin-token-change-me-0123456789ab
export HTTP_ADDR ?= 127.0.0.1:8080
ADDR := http://$(HTTP_ADDR)
BIN := bin/ticketrush

.PHONY: run stop help test services build vet demo clean faults cluster scaleout partition fuzz idlecost

## help: list the targets, one line each
help:
	@awk '/^## [a-z0-9-]+:/ { if (t) print t; t = sprintf("  %-17s %s", substr($$2, 1, length($$2)-1), substr($$0, length($$2)+5)); next } \
	  /^## / && t { t = t " " substr($$0, 4); next } { if (t) print t; t = "" }' $(MAKEFILE_LIST)

## build: build bin/ticketrush (the commit it was built from shows in `bin/ticketrush version`)
build:
	$(GO) build -ldflags "-X main.commit=$$(git rev-parse HEAD 2>/dev/null)" -o $(BIN) ./cmd/ticketrush

## services: install (when missing) and start Redis and Postgres at REDIS_URL and DATABASE_URL, data under .data/
services:
	@scripts/services.sh

## run: set up Redis and Postgres, start the service, create (or reuse) the demo concert and print the walk
run:
	@scripts/run.sh --check $(BIN) $(ADDR)
	@$(MAKE) --no-print-directory services build
	@scripts/run.sh $(BIN) $(ADDR)

## stop: stop what make run and make services started (the pids recorded under .data/), nothing else
stop:
	@scripts/stop.sh

## test: set up Redis and Postgres, then every unit and integration test with the race detector, then
## the Redis-touching packages again on a local Redis Cluster, the fault suite, the scale-out test, the
## partition suite, then the observability checks: alert rules (promtool), the compose file, and every
## dashboard and alert query against a real Prometheus scraping the service under load
test: services cluster
	@scripts/chromium.sh
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 8m -p $(TEST_PACKAGES_AT_ONCE) ./...
	TEST_REDIS_URL="$$(scripts/cluster.sh 2>/dev/null)" $(GO) test -race -count=1 -timeout 8m -p $(TEST_PACKAGES_AT_ONCE) -skip 'OnCluster$$' $(REDIS_PACKAGES)
	$(MAKE) --no-print-directory faults scaleout partition fuzz
	$(MAKE) --no-print-directory rules-check compose-check promcheck

# Test packages run at once in each pass. They spend most of their time waiting on timers, Redis,
# Postgres and the browser, so on a 2-core machine 4 at a time took each pass 137-139 s and 145-150 s
# where go test's default (one per core) took 187 and 175 s; each package keeps its own ports.
TEST_PACKAGES_AT_ONCE ?= 4

# The packages whose tests use Redis: `make test` runs them a second time on the cluster (tests named
# ...OnCluster use a cluster in the first pass already).
REDIS_PACKAGES := ./internal/redis/... ./internal/queue/... ./internal/booking/... ./internal/writebehind/... ./internal/linearize/... \
	./internal/http/... ./cmd/ticketrush/... ./internal/contract/...

## faults: the fault suite (docs/faults.md): Redis SIGKILLed and restarted, Postgres cut off and the API
## process SIGKILLed, each in the middle of a purchase storm with a client-side ledger; then the
## write-behind's worker-kill and Postgres-outage tests. Each fault logs a FAULT SUMMARY line.
faults: services
	@scripts/suite.sh '^(=== RUN|--- |FAIL|ok|PASS)|FAULT SUMMARY|faults_test.go' \
		$(GO) test -tags faults -count=1 -timeout 8m -v -run 'TestFault' ./cmd/ticketrush/
	$(GO) test -count=1 -timeout 5m -run 'TestWorkerKilledFiveTimes|TestPostgresUnreachable|TestBacklogAcrossRedisRestart' ./internal/writebehind/
	$(GO) test -count=1 -timeout 5m -run 'TestRedisOutageAnswers503|TestAdminCreateWhilePostgresIsDown' ./cmd/ticketrush/

## cluster: a local Redis Cluster, 3 masters and 3 replicas on 127.0.0.1:7000-7005 (scripts/cluster.sh;
## `scripts/cluster.sh stop` stops it); prints nothing, REDIS_URL="$(scripts/cluster.sh)" to use it
cluster:
	@scripts/cluster.sh >/dev/null

## scaleout: 3 api, 2 scheduler and 2 writebehind processes on a private cluster (ports 7100-7105), a
## master SIGKILLed mid-sale; prints the error window and the time to recover; then /readyz probed 200
## times on each of 4 instances after a master's election (docs/faults.md, "Readiness")
scaleout: services
	$(GO) test -tags scaleout -count=1 -timeout 5m -v -run 'TestScaleOut' ./cmd/ticketrush/

## partition: the partition suite (docs/faults.md, "Partitions"): 3 api, 1 scheduler and 2 writebehind
## processes, each in a cgroup of its own, on a private cluster whose nodes each have a loopback address
## (127.0.0.31-36, ports 7300-7305); links cut, lossy and slow mid-sale (iptables, as root). Each
## scenario prints a PARTITION SUMMARY line
partition: services
	@command -v iptables >/dev/null || scripts/install.sh iptables
	@scripts/suite.sh '^ *(=== RUN|--- |FAIL|ok|PASS)|^PARTITION SUMMARY|(partition|sale)_test.go|(netfault|dbtest|proxy)\.go|^\s+(Error|Messages):' \
		$(GO) test -tags partition -count=1 -timeout 6m -v -run 'TestPartition' ./cmd/ticketrush/

# Go native fuzz targets, package:target[:executions], each run for that many executions (FUZZCOUNT when
# not given; their seeds and testdata/fuzz corpus run in every go test too). A count, not a duration: a
# duration's deadline races the fuzz coordinator's workers and fails a target with "context deadline
# exceeded" and no crasher on a busy machine (golang/go#75804, not fixed in go1.26). FUZZTIME=30s runs each
# target for a time instead. A failure leaves its input under the package's testdata/fuzz: commit it.
FUZZ_TARGETS := internal/auth:FuzzQueueTokenVerify internal/auth:FuzzUsersVerify internal/auth:FuzzChallengeCheck \
	internal/http:FuzzDecodeBodies internal/http:FuzzProblemWriter internal/http:FuzzRouter \
	internal/http:FuzzJSONString internal/http:FuzzQuickDecode internal/ticketrush:FuzzIDChecksKeepTheRules \
	internal/redis:FuzzFlatRecordsDecodeAsJSON internal/flatjson:FuzzFieldsReadAsEncodingJSONDoes internal/auth:FuzzFastVerifyAgrees
FUZZCOUNT ?= 10000x
FUZZTIME ?=

## fuzz: run every fuzz target for its count of executions (FUZZCOUNT, 10000x; part of make test), or
## for FUZZTIME each when set
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest#*:}; \
		if [ "$$n" = "$$rest" ]; then n=$(FUZZCOUNT); fi; n=$${FUZZTIME:-$$n}; \
		echo "fuzz $$name ($$pkg, $$n)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$n ./$$pkg/ | grep -v '^fuzz: elapsed'; \
		test "$${PIPESTATUS[0]}" = 0; \
	done

## clean: remove bin/ (not .data/: make stop first, then rm -rf .data to start afresh)
clean:
	rm -rf bin

# --- Observability: dashboards, Prometheus rules, the compose stack (dashboards/README.md) -------------
.PHONY: up down compose-check promcheck rules-check dashboards dashboards-check

COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)

# need COMMAND,PACKAGE: install the Debian package when the command is missing (scripts/install.sh).
define need
@command -v $(1) >/dev/null || scripts/install.sh $(2)
endef

# docker_engine: fail in one line unless a Docker engine and Compose answer.
define docker_engine
@command -v docker >/dev/null || { echo "make $@ needs Docker: the docker command is not installed (https://docs.docker.com/engine/install/); make run needs no Docker" >&2; exit 1; }
@docker info >/dev/null 2>&1 || { echo "make $@ needs a running Docker engine: the docker command is here but no engine answers (start dockerd, or check DOCKER_HOST); make run needs no Docker" >&2; exit 1; }
@$(COMPOSE) version >/dev/null 2>&1 || { echo "make $@ needs Docker Compose: neither 'docker compose' nor docker-compose works" >&2; exit 1; }
endef

## up: the whole stack in Docker (Redis, Postgres, ticketrush, Prometheus, Grafana) with the dev secrets
up:
	$(call docker_engine)
	$(COMPOSE) -f docker-compose.yml up --build -d
	@echo "API http://127.0.0.1:8080  Prometheus http://127.0.0.1:9090  Grafana http://127.0.0.1:3000 (make down stops it)"

## down: stop and remove the Docker stack of make up
down:
	$(call docker_engine)
	$(COMPOSE) -f docker-compose.yml down

## compose-check: validate docker-compose.yml without a Docker engine (Debian's docker-compose)
compose-check:
	$(call need,docker-compose,docker-compose)
	docker-compose -f docker-compose.yml config -q

## rules-check: promtool checks the Prometheus config and alert rules and runs their unit tests
rules-check:
	$(call need,promtool,prometheus)
	cd dashboards/prometheus && promtool check config prometheus.yml && promtool test rules alerts_test.yml

## promcheck: ticketrush under a short load, Debian's Prometheus scraping it; every dashboard panel must
## return data and every alert expression parse (dashboards/promcheck_test.go)
promcheck: services
	$(call need,prometheus,prometheus)
	$(GO) test -tags promcheck -count=1 -timeout 5m -v -run 'TestPromQL' ./dashboards/

## dashboards: regenerate dashboards/json from dashboards/generate.js (Grafana Foundation SDK)
dashboards:
	$(call need,npm,npm)
	cd dashboards && npm ci --no-audit --no-fund --silent && node generate.js

## dashboards-check: the committed dashboards/json is what generate.js generates
dashboards-check:
	$(call need,npm,npm)
	cd dashboards && npm ci --no-audit --no-fund --silent && node --test generate.test.js

# --- Load tests and the benchmark (loadtest/README.md) --------------------------------------------------
.PHONY: loadtest bench k6 capacity

PROFILE ?= short
SCENARIO ?= onsale
K6_VERSION := v1.8.1
K6 ?= $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin/k6

## k6: install k6 with go install when it is missing
k6:
	@test -x $(K6) || { echo "installing k6 $(K6_VERSION) with go install" >&2; $(GO) install go.k6.io/k6@$(K6_VERSION); }

## loadtest: a short onsale (PROFILE=full: the long one; SCENARIO=poll-storm|hot-seat: the others) against
## HTTP_ADDR, starting the service when nothing answers there, then the invariant check
loadtest: services build k6
	@PROFILE=$(PROFILE) GO=$(GO) loadtest/run.sh $(SCENARIO) $(BIN) $(ADDR) $(K6)

## bench: one table of polls/s, joins/s, holds/s, payments/s, seat maps/s against this machine's ceilings,
## the write-behind's lag and account, the capacity of one concert, Redis's µs per call of each script
## under an HTTP storm and pipelined, the idle cost of 500 concerts (about 6 minutes)
## (BENCH_FLAGS="-reps 5 -duration 10s" and the rest: go run ./loadtest/bench -h)
bench: services build
	$(GO) build -o bin/ticketrush-bench ./loadtest/bench
	@bin/ticketrush-bench -ticketrush $(BIN) $(BENCH_FLAGS)

## idlecost: Redis commands/s and the CPU of the service and of Redis with CONCERTS (500) concerts, every
## tenth with a sale opening tomorrow, and nobody buying, SETTLE (75) s after their creation, on a private
## Redis and a fresh database: make bench's idle row alone (docs/performance.md, "Idle cost")
idlecost: services build
	$(GO) build -o bin/ticketrush-bench ./loadtest/bench
	@bin/ticketrush-bench -ticketrush $(BIN) -idle-only -idle-concerts $(or $(CONCERTS),500) -idle-sales 10 \
		-idle-settle $(or $(SETTLE),75)s

## capacity: Redis's µs per join, hold, cancel, charge and payment step of one concert of one date, and
## what it can take, on a private Redis and on private clusters of 3 and 6 masters (scripts/cluster.sh,
## ports from 7400), beside the floor (EVALSHA of return 1), projected to N masters: make bench's capacity
## rows and pipelined column alone (docs/performance.md, "Capacity of one concert"; about 2 minutes)
capacity:
	$(GO) build -o bin/ticketrush-bench ./loadtest/bench
	@bin/ticketrush-bench -capacity-only $(BENCH_FLAGS)

# --- The pages (README "The pages") ----------------------------------------------------------------------
.PHONY: screenshots

## screenshots: the browser tests in headless chromium (scripts/chromium.sh installs it, the CJK fonts and
## axe-core), saving a PNG of each page state in Korean and English under docs/screenshots/
screenshots: services
	@scripts/chromium.sh
	$(GO) test -count=1 -run 'TestPagesInABrowser|TestPagesInEachLanguage' ./cmd/ticketrush/ -args -screenshots=$(CURDIR)/docs/screenshots
