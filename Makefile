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

# The race detector wherever the code under test, or code it drives, runs goroutines.
# storegen (the store generator) and report (HTML from a warehouse) start none: under
# -race they took 28 s and 29 s of package time in CI for nothing the detector can find
# (0.9 s and 12 s without); what they call is raced in its own package. pipeline/e2e
# varies the warehouse a run meets (tampered, planted, held open, full) on the real
# fixtures: the run's goroutines are those pipeline's own tests race on the same stores,
# and its 88 s under -race were 38 s without.
NO_RACE_PKGS := storegen report pipeline/e2e
# These tests compare a result with an oracle computed by SQLite, or generate a
# SQLite store: under -race modernc's transpiled SQLite is instrumented too and
# runs 20-35 times slower (TestJSONScanMatchesSQLite 17.5 s against 0.5 s,
# TestReasonCodesOnEveryStore 77 s against 11 s), while the code they drive is
# raced by the other tests of its package. They run once, without -race: the
# first command skips exactly the names the second one runs.
NO_RACE_TESTS := ^(TestReasonCodesOnEveryStore|TestMessagePassGenerated|TestMessagePassFanoutGivenUp|TestJSONScanMatchesSQLite|TestGenStoreDemoMatchesBundledStore)$$
NO_RACE_TEST_PKGS := ./pipeline ./extract/... ./cmd/kandev-extract
test:
	$(GO) test -race -count=1 -timeout 40m -skip '$(NO_RACE_TESTS)' $$($(GO) list ./... | grep -v -x $(foreach p,$(NO_RACE_PKGS),-e github.com/kandev/kandev-extract/$(p)))
	$(GO) test -count=1 -timeout 20m -run '$(NO_RACE_TESTS)' $(NO_RACE_TEST_PKGS)
	$(GO) test -count=1 -timeout 20m $(foreach p,$(NO_RACE_PKGS),./$(p))

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
