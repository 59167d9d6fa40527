# lossgen's everyday commands. `make demo` runs the main job; `make test` is what CI runs.
GO ?= go

.PHONY: all demo test vet unit unit-default test-purego test-generator fuzz-smoke golden-check golden-update generate check-generated data docs example example-run

all: test

# The main job: the ClipPPO+GAE kernel on the shipped real CartPole rollout, every backend
# against the reference interpreter.
demo:
	$(GO) run ./cmd/lossgen eval -spec spec/examples/clip_ppo_gae.yaml -in golden/data/cartpole_rollout.npz -backend all

# Everything CI checks: vet and staticcheck, the tests (with and without the purego tag), a short run of the
# spec fuzzer, the golden cases against the interpreter, and that generated/ is what the
# generator makes today. Each step runs in turn and reports its wall time; the first failure
# stops the run.
TEST_STEPS := vet unit test-purego test-generator fuzz-smoke golden-check check-generated
test:
	@total=$$(date +%s); for step in $(TEST_STEPS); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$step || { echo "make test: $$step FAILED after $$(( $$(date +%s) - start )) s" >&2; exit 1; }; \
		echo "make test: $$step took $$(( $$(date +%s) - start )) s (load $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"; \
	done; echo "make test: all steps passed in $$(( $$(date +%s) - total )) s"

# Every package of both modules: lossgen's (./...) and the runtime's, a module of its own in
# runtime/ that ./... does not reach; go.work makes the pattern ./runtime/... work from here.
PKGS := ./... ./runtime/...
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go') >&2; echo "gofmt: the files above need formatting" >&2; exit 1)
	$(GO) vet $(PKGS)
	$(GO) vet -tags purego $(PKGS)
	GOARCH=arm64 $(GO) vet ./generated/... ./runtime/...
	@# The runtime module on its own, outside the workspace: it (its tests included) must need
	@# nothing of the generator's module, which a user's module does not require.
	cd runtime && GOWORK=off $(GO) vet ./...
	@# staticcheck (dead code, suspicious expressions); the module proxy serves it, pinned.
	$(GO) run $(STATICCHECK) $(PKGS)

# On a CPU with AVX2 and FMA the generated tests must run the AVX2 kernels (a silently
# missing assembly backend fails instead of passing on the Go fallback).
REQUIRE_IMPL := $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && echo avx2)
# On a CPU with AVX-512 F, DQ and VL the generated TestAVX512MatchesAVX2 must run (not skip).
REQUIRE_AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && grep -qw avx512dq /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo && echo 1)

# LOSSGEN_FULL=1: the example packages' TestPTXSimulated simulates every launch whole, on
# every golden case (a generated test's default simulates a representative part of a large
# launch table; see README "Golden cases and the generated test"), and lossgen's own slow
# sweeps (gen's all-backend tables, ptxsim's whole fast-path comparisons) run every configuration;
# a plain `go test ./...` runs a representative part of each, every package within 2 minutes.
# Every go test here passes -timeout: Go's default of 10 minutes a package is too close to
# what a loaded 2-core machine needs for the full runs.
UNIT_TIMEOUT ?= 30m
TEST_TIMEOUT ?= 20m
unit:
	LOSSGEN_FULL=1 LOSSGEN_REQUIRE_IMPL=$(REQUIRE_IMPL) LOSSGEN_REQUIRE_AVX512=$(REQUIRE_AVX512) $(GO) test -timeout $(UNIT_TIMEOUT) $(PKGS)

# The default run of every package (no LOSSGEN_FULL): what a developer's go test ./... ./runtime/... runs.
unit-default:
	LOSSGEN_REQUIRE_IMPL=$(REQUIRE_IMPL) LOSSGEN_REQUIRE_AVX512=$(REQUIRE_AVX512) $(GO) test -timeout $(TEST_TIMEOUT) $(PKGS)

test-purego:
	LOSSGEN_REQUIRE_IMPL=go $(GO) test -timeout $(TEST_TIMEOUT) -tags purego ./generated/... ./runtime/... ./gen/...

# The spec pipeline's fuzzer (gen/fuzz_test.go) for a short run beyond its seeds, which plain
# `go test ./gen` runs. A count, not a duration: Go 1.26's coordinator can fail a duration-bound
# run with "context deadline exceeded" at its deadline, with no failing input
# (go.dev/issue/75804, fixed in Go 1.27). A long run: FUZZTIME=3h FUZZ_TIMEOUT=0 make fuzz-smoke
# (0: no timeout).
FUZZTIME ?= 20000x
FUZZ_TIMEOUT ?= 20m
# scripts/fuzz-smoke repeats the run (three runs in all) when the fuzz worker died on its 10 s
# wall clock with an input that passes on its own (a loaded machine); a real failure fails at once.
fuzz-smoke:
	scripts/fuzz-smoke "$(GO)" $(FUZZTIME) $(FUZZ_TIMEOUT)

# The golden-input generator must draw the same bits on every platform: its test vectors on
# 32-bit x86 (SSE2 and software floating point) and with FMA-capable amd64 code generation.
# A kernel that cannot run 32-bit binaries (exit status 126) skips the 386 runs, saying so.
test-generator:
	GOAMD64=v3 $(GO) test -timeout $(TEST_TIMEOUT) -count=1 -run 'Generat|Recipe' ./runtime
	@set -e; bin=$$(mktemp -d)/runtime386.test; for fp in sse2 softfloat; do \
		GOARCH=386 GO386=$$fp $(GO) test -c -o $$bin ./runtime; \
		rc=0; $$bin -test.timeout $(TEST_TIMEOUT) -test.run 'Generat|Recipe' >$$bin.out 2>&1 || rc=$$?; \
		if [ $$rc -eq 126 ]; then echo "test-generator: this machine cannot run 386 binaries; GO386=$$fp skipped"; \
		elif [ $$rc -ne 0 ]; then cat $$bin.out; exit 1; \
		else echo "ok  runtime generator, GOARCH=386 GO386=$$fp"; fi; \
	done

golden-check:
	$(GO) run ./cmd/lossgen golden spec/examples/*.yaml

golden-update:
	$(GO) run ./cmd/lossgen golden -update spec/examples/*.yaml

generate:
	$(GO) generate ./generated/...
	cd examples/cartpole-ppo && $(GO) generate .

# The spec reference and the spec's JSON Schema, generated from the stage registry
# (gen/specdoc; its TestDocsFresh fails on a stale copy too).
DOCS := docs/spec-reference.md docs/spec.schema.json
docs:
	$(GO) run ./cmd/lossgen reference -force -o docs/spec-reference.md
	$(GO) run ./cmd/lossgen schema -force -o docs/spec.schema.json

# Regenerates generated/, the example's kernel and the docs, and fails if that changed
# anything (or left files untracked).
GENERATED := generated/ examples/cartpole-ppo/loss/
check-generated: generate docs
	@git diff --exit-code -- $(GENERATED) || (echo "$(GENERATED) stale: run make generate and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain -- $(GENERATED))" || (git status --porcelain -- $(GENERATED) >&2; echo "untracked files in $(GENERATED)" >&2; exit 1)
	@git diff --exit-code -- $(DOCS) || (echo "$(DOCS) stale: run make docs and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain -- $(DOCS))" || (git status --porcelain -- $(DOCS) >&2; echo "$(DOCS) not committed: run make docs and commit" >&2; exit 1)

# The PPO trainer example, a module of its own (GoMLX and gonum/plot stay out of lossgen's
# go.mod; the Go proxy serves them): vet, and its unit tests (the CartPole port against
# hand-worked dynamics, the network+kernel gradients against central differences, a seeded
# run's determinism, the generated kernel's tests), not a training run (make example-run).
example:
	cd examples/cartpole-ppo && $(GO) vet ./... && $(GO) test -timeout $(TEST_TIMEOUT) -count=1 ./...

# Trains until CartPole-v1 is solved (about a minute on 2 cores) and redraws the curve.
example-run:
	cd examples/cartpole-ppo && $(GO) run . -plot curve.png

# Rebuilds the derived real-data files in golden/data from the recorded rollout.
data:
	$(GO) run ./golden/data/mkdata
