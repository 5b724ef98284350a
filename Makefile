# kandev-extract — see README.md. `make run` extracts (the demo store when no
# Kandev store is found); `make test` runs every test.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/kandev/kandev-extract/pipeline.Version=$(VERSION)
BIN     := bin/kandev-extract
ARGS    ?=

export CGO_ENABLED = 1

.PHONY: build run test lint fmt bench fuzz clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kandev-extract

run: build
	./$(BIN) run $(ARGS)

test:
	$(GO) test -race -count=1 -timeout 40m ./...

# staticcheck is pinned here (.ci/run reads this version too); `go run pkg@version`
# builds it from the Go module proxy once and caches it, without touching go.mod.
STATICCHECK_VERSION ?= v0.8.2
lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Benchmarks print figures (no timed assertions live in tests); see docs/benchmarks.md.
# The driver runs ./load's Parquet writer benchmarks itself and records them.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./transform
	$(GO) run ./internal/bench $(BENCH_ARGS)

# Fuzz each parser for a bounded time (not part of make test / CI).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzParseStamp$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzParseKey$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzStepAtStart$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzAsInt$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transform -run '^$$' -fuzz '^FuzzAsStamp$$' -fuzztime $(FUZZTIME)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin warehouse
