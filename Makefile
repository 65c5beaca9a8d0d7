.DEFAULT_GOAL := help
GO ?= go
BIN := bin/spotter
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

deps: ## install what is missing (Debian's chromium and fonts); idempotent
	@./.ci/deps

build: ## build bin/spotter
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/spotter

DEMO ?= examples/demo-anthropic.yaml

demo: deps build ## run the demo task (a replayed Claude session on the built-in app) and print where the report is
	@rm -rf runs/demo
	./$(BIN) run $(DEMO) --out runs/demo

# The integration step runs three packages at a time (most of a package's
# time is spent waiting on browsers, sandboxes and servers), the slowest
# first so that none of them starts last. screen/cdp in its screencast mode
# and the TypeScript clients' tests (both mostly waiting too) run beside
# vet and the -race step; their output is printed after it.
SLOW_FIRST := ./web/ ./internal/matrix/ ./internal/e2e/ ./screen/playwright/ ./screen/cdp/ ./internal/bench/ \
  ./cmd/spotter/ ./internal/runner/ ./internal/batch/
SCREENCAST := SPOTTER_CDP_MODE=screencast SPOTTER_INTEGRATION=1 $(GO) test -count=1 ./screen/cdp/

test: deps ## vet, unit tests with -race, every test against a real Chromium, Xvnc and Playwright (the behaviour matrix among them, its table printed), the TypeScript clients
	@mkdir -p runs && rm -f runs/matrix.md runs/screencast.* runs/npm-test.*
	@echo "beside the next two steps: $(SCREENCAST); cd clients/typescript && npm test"
	@{ $(SCREENCAST) > runs/screencast.log 2>&1; echo $$? > runs/screencast.rc; } & \
	  { (cd clients/typescript && npm test) > runs/npm-test.log 2>&1; echo $$? > runs/npm-test.rc; } & \
	  $(GO) vet ./... && $(GO) test -race -count=1 ./...; rc=$$?; wait; \
	  echo "--- $(SCREENCAST)"; cat runs/screencast.log; echo "--- cd clients/typescript && npm test"; cat runs/npm-test.log; \
	  [ $$rc -eq 0 ] && [ "$$(cat runs/screencast.rc)" = 0 ] && [ "$$(cat runs/npm-test.rc)" = 0 ]
	SPOTTER_INTEGRATION=1 SPOTTER_MATRIX_TABLE=$(CURDIR)/runs/matrix.md $(GO) test -count=1 -p 3 -timeout 30m $(SLOW_FIRST) ./... \
	  || { cat runs/matrix.md 2>/dev/null; exit 1; }
	@cat runs/matrix.md

bench: deps build ## spotter bench (step, capture, concurrency, sandbox, server, tokens against a same-run Playwright baseline), then the display benchmarks
	./$(BIN) bench --json runs/bench/figures.jsonl
	SPOTTER_INTEGRATION=1 $(GO) test -run '^$$' -bench 'Step$$' -benchtime 1x -step.rounds 30 ./screen/cdp/
	SPOTTER_INTEGRATION=1 $(GO) test -run '^$$' -bench . -benchtime 40x ./screen/vnc/
	SPOTTER_INTEGRATION=1 SPOTTER_PERF=1 $(GO) test -count=1 ./internal/perf/

SOAK_FOR ?= 10m
SOAK_CLIENTS ?= 4
SOAK_REPLICAS ?= 2
SOAK_RETAIN ?= 2m
SOAK_EVERY ?= 1m

soak: deps ## SOAK_CLIENTS clients against SOAK_REPLICAS replicas (one PostgreSQL) for SOAK_FOR, printing memory, goroutines, fds, disk and p95 every SOAK_EVERY
	bash -o pipefail -c "SPOTTER_INTEGRATION=1 SPOTTER_SOAK_FOR=$(SOAK_FOR) SPOTTER_SOAK_CLIENTS=$(SOAK_CLIENTS) \
	  SPOTTER_SOAK_REPLICAS=$(SOAK_REPLICAS) SPOTTER_SOAK_RETAIN=$(SOAK_RETAIN) SPOTTER_SOAK_EVERY=$(SOAK_EVERY) \
	  $(GO) test -count=1 -timeout 0 -v -run '^TestSoakReplicas$$' ./web/ 2>&1 | grep --line-buffered -E 'soak_replicas_test|^(---|ok|FAIL|PASS)'"

fuzz: ## run each fuzz target for 20000 inputs (counts: Go 1.26's time-based -fuzztime misbehaves here)
	@for p in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 20000x $$p || exit 1; done; done

clean: ## remove build output and demo runs
	rm -rf bin runs

.PHONY: help deps build demo test bench soak fuzz clean
