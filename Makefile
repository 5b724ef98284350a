# kandev-extract — see README.md. `make run` extracts (the demo store when no
# Kandev store is found); `make test` runs every test.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/kandev/kandev-extract/pipeline.Version=$(VERSION)
BIN     := bin/kandev-extract
ARGS    ?=

export CGO_ENABLED = 1

.PHONY: build lake run test lint fmt bench bench-lake fuzz clean cross install release

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kandev-extract

# The scale-out hub (docs/scale-out.md), a binary of its own: spokes need
# only kandev-extract.
lake:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kandev-lake ./cmd/kandev-lake

# Into $(go env GOBIN), else $(go env GOPATH)/bin, with the version stamped.
install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/kandev-extract

# A release binary for this platform, built as the release workflow builds
# each archive's: stripped (-s -w), without local paths (-trimpath), the
# version stamped.
RELEASE_BIN ?= bin/release/kandev-extract
release:
	$(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(RELEASE_BIN) ./cmd/kandev-extract
	@echo "$(RELEASE_BIN): kandev-extract $(VERSION), stripped"

run: build
	./$(BIN) run $(ARGS)

# The race detector runs on the packages whose own code starts goroutines
# (pipeline's readers, load's writers, extract's PostgreSQL watchdog, the
# hub, pgtest) and on the small ones, where it costs nothing. The others
# start none, and what they call is raced in its own package, so they run
# without it (package time under -race, then without, alone on this 2-core
# machine):
#   cmd/kandev-extract 170 s, 48 s: its tests drive the CLI, in process or as
#     child processes of the test binary; those of its own goroutines (the
#     progress ticker, schedule's loop and signals) are CMD_RACE_TESTS, run
#     under -race instead;
#   lake 95 s, 39 s (its concurrent publishers share the bucket and a test
#     hook set before they start);
#   cmd/kandev-lake 14 s, 6 s; inspect 9 s, 5 s;
#   extract/evidence 36 s, 8 s (the message pass runs on pipeline's second
#     reader, raced there); extract/membound 49 s, 29 s (the peak RSS of child
#     processes built without -race);
#   pipeline/e2e (the spec's rules and the warehouse's faults through a run);
#   report, storegen 29 s, 12 s.
NO_RACE_PKGS := storegen report pipeline/e2e lake cmd/kandev-lake inspect extract/evidence extract/membound cmd/kandev-extract
CMD_RACE_TESTS := ^(TestProgressRender|TestProgressOnATerminalOnly|TestScheduleFiresHonoursTheLockAndStopsOnSIGTERM|TestScheduleRunNowIsWaitedForOnSIGTERM)$$
# The raced and the unraced packages run side by side (each go test runs two
# packages at a time): one pass alone leaves a core idle behind its longest
# package. pipeline, the longest raced one, is named first so that it starts
# first; the race-built cmd tests follow the shorter unraced pass. Output
# comes package by package; the target fails if either pass does.
RACE_PKGS = ./pipeline $$($(GO) list ./... | grep -v -x -e github.com/kandev/kandev-extract/pipeline $(foreach p,$(NO_RACE_PKGS),-e github.com/kandev/kandev-extract/$(p)))
test:
	$(GO) test -race -count=1 -timeout 40m $(RACE_PKGS) & raced=$$!; \
	$(GO) test -count=1 -timeout 20m -skip '$(CMD_RACE_TESTS)' $(foreach p,$(NO_RACE_PKGS),./$(p)); rest=$$?; \
	$(GO) test -race -count=1 -timeout 20m -run '$(CMD_RACE_TESTS)' ./cmd/kandev-extract || rest=1; \
	wait $$raced; raced=$$?; \
	if [ $$raced -ne 0 ] || [ $$rest -ne 0 ]; then \
	  echo "make test: FAILED (raced packages: exit $$raced; unraced packages, then cmd's raced tests: exit $$rest)"; exit 1; fi

# staticcheck is pinned here (.ci/run reads this version too); `go run pkg@version`
# builds it from the Go module proxy once and caches it, without touching go.mod.
STATICCHECK_VERSION ?= v0.8.2
lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Benchmarks print figures (no timed assertions live in tests); see docs/benchmarks.md.
# The driver times runs against the naive floors (sqlite3 CLI; psql and a throwaway
# PostgreSQL server from the system binaries, as the tests use, unless BENCH_ARGS="-pg ''"),
# and runs ./load's Parquet writer benchmarks itself and records them.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./transform
	$(GO) run ./internal/bench $(BENCH_ARGS)

# The scale-out hub at scale (docs/benchmarks.md, "Lake ingest at scale"):
# 200 installations x 3 runs ingested night by night into one catalog,
# then maintenance; prints wall times, peak RSS and data files.
LAKEBENCH_ARGS ?=
bench-lake:
	$(GO) run ./internal/lakebench $(LAKEBENCH_ARGS)

# Fuzz each parser for a bounded time (not part of make test / CI).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzParseStamp$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzParseKey$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzStepAtStart$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzAsInt$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzAsStamp$$' -fuzztime $(FUZZTIME)

# Cross-platform compile checks (issue 20; .ci/run runs them). See
# docs/operations.md "What differs on macOS and Windows".
#  - windows/amd64: every package, tests included, vetted with cgo through
#    Debian's MinGW-w64 C compiler (posix-threads flavour).
#  - darwin/amd64 and darwin/arm64 with CGO_ENABLED=0: vetted, tests
#    included, every package whose code and tests need no cgo; built, every
#    other package whose code needs none. The rest link DuckDB's macOS
#    library, which needs Apple's toolchain: the release workflow
#    (.github/workflows/release.yml) builds and tests them on macOS.
#  - the release workflow that builds each platform natively, which cannot
#    run here, is linted with actionlint (fetched like staticcheck).
# CROSS_WINE=1 also links kandev-extract.exe against the UCRT (Debian's
# MinGW links msvcrt; scripts/mingw-ucrt bridges the difference) and runs it
# under Wine: version, --help and an extraction of a fixture store
# (wine-smoke.sh); then wine-held.sh proves the "Files held open" behaviour
# with Wine's emulation of Windows share modes (a run while another process
# holds warehouse.duckdb open exits 0 and the database waits in _pending/;
# status swaps it in once released). Opt-in, not in CI.
# CROSS_DARWIN_ARCHS=arm64 checks one macOS architecture (.ci/run does, to
# halve the cold-cache cost: no package here has architecture-specific code).
MINGW_CC ?= x86_64-w64-mingw32-gcc-posix
ACTIONLINT_VERSION ?= v1.7.12
CROSS_DARWIN_ARCHS ?= amd64 arm64
CROSS_WINE ?=
cross:
	@command -v $(MINGW_CC) >/dev/null || { echo "cross: $(MINGW_CC) not found: apt-get install gcc-mingw-w64-x86-64" >&2; exit 1; }
	GOOS=windows GOARCH=amd64 CC=$(MINGW_CC) $(GO) vet ./...
	@set -e; for arch in $(CROSS_DARWIN_ARCHS); do \
	  vet=; build=; skipped=; \
	  for p in $$($(GO) list ./...); do \
	    cgo() { GOOS=darwin GOARCH=$$arch $(GO) list -deps $$1 -f '{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}' $$p; }; \
	    if [ -n "$$(cgo)" ]; then skipped="$$skipped $${p##*/kandev-extract/}"; \
	    elif [ -n "$$(cgo -test)" ]; then build="$$build $$p"; \
	    else vet="$$vet $$p"; fi; \
	  done; \
	  echo "darwin/$$arch: go vet (CGO_ENABLED=0):$$(echo "$$vet" | sed 's| [^ ]*/kandev-extract/| |g')"; \
	  GOOS=darwin GOARCH=$$arch CGO_ENABLED=0 $(GO) vet $$vet; \
	  if [ -n "$$build" ]; then \
	    echo "darwin/$$arch: go build, tests need cgo:$$(echo "$$build" | sed 's| [^ ]*/kandev-extract/| |g')"; \
	    GOOS=darwin GOARCH=$$arch CGO_ENABLED=0 $(GO) build $$build; \
	  fi; \
	  echo "darwin/$$arch: not checked here, need cgo (DuckDB):$$skipped"; \
	done
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) -no-color -shellcheck= -pyflakes= .github/workflows/release.yml
	@if [ -n "$(CROSS_WINE)" ]; then bash scripts/mingw-ucrt/wine-smoke.sh && bash scripts/mingw-ucrt/wine-held.sh; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin warehouse
