# fp8lab — two commands do all the set-up on a fresh machine:
#   make lab    build what the lab needs and serve it on http://127.0.0.1:8080
#   make test   install what the tests need (Debian packages, only when missing) and run every test
SHELL := /bin/bash
GO ?= go
GOLDEN ?= ../shared/golden/h200
ADDR ?= 127.0.0.1:8080
DATA ?= data

WASM_DIR        := web/static/wasm
GOROOT_WASM      = $(shell $(GO) env GOROOT)/lib/wasm
# The revision recorded with every run (sim.Build): stamped, since -buildvcs
# may be off and the js build never has it.
REVISION        ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
LAB_LDFLAGS     := -X github.com/fp8lab/fp8lab/sim.buildRevision=$(REVISION)
ECHARTS_VERSION ?= 5.6.0

.PHONY: lab build lab-wasm verify verify-exhaustive test test-deps vet bench fuzz vendor-echarts lab-screenshot gpucheck

# The experiment registry for the page's Web Worker, and the wasm_exec.js of
# the same Go (they must match); go:embed picks them up from web/static/wasm.
lab-wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags '$(LAB_LDFLAGS)' -o $(WASM_DIR)/lab.wasm ./wasm
	cp "$(GOROOT_WASM)/wasm_exec.js" $(WASM_DIR)/wasm_exec.js

build: lab-wasm
	$(GO) build -ldflags '$(LAB_LDFLAGS)' -o bin/lab ./cmd/lab

lab: build
	./bin/lab serve -addr $(ADDR) -data $(DATA)

verify: build
	./bin/lab verify $(GOLDEN)/*.txt $(GOLDEN)/*.tsv testdata/h200-fresh/*.gz

verify-exhaustive: build
	./bin/lab verify -exhaustive $(GOLDEN)/fp8_convert.txt

# Debian packages the tests need: lavapipe (Vulkan on the CPU) for the WGSL
# tests, Chromium for the browser tests, NumPy for the tests that read files
# np.save writes (attention-file). Installed only when missing.
test-deps:
	@missing=""; \
	for p in mesa-vulkan-drivers libvulkan1 chromium python3-numpy; do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./fp8/... ./accum/... ./attention/... ./sim/... ./experiments/... ./wasm/...

test: test-deps vet
	$(GO) test -timeout 20m ./...
	$(GO) test -race -timeout 10m ./sim/... ./lab/... ./cmd/lab

bench:
	$(GO) test ./accum -run '^$$' -bench . -benchtime 2s
	$(GO) test ./attention -run '^$$' -bench Decode -benchtime 5x

fuzz:
	$(GO) test ./fp8 -run '^$$' -fuzz FuzzEncodeE4M3 -fuzztime 30s
	$(GO) test ./fp8 -run '^$$' -fuzz FuzzEncodeE5M2 -fuzztime 30s
	$(GO) test ./accum/golden -run '^$$' -fuzz FuzzParseRecords -fuzztime 30s
	$(GO) test ./accum/golden -run '^$$' -fuzz FuzzParseLong -fuzztime 30s
	$(GO) test ./accum/golden -run '^$$' -fuzz FuzzParseConvert -fuzztime 30s

# Refresh the vendored ECharts from npm (pinned; its licenses come along).
vendor-echarts:
	@tmp=$$(mktemp -d); \
	( cd $$tmp && npm init -y >/dev/null && npm install --no-audit --no-fund --silent echarts@$(ECHARTS_VERSION) ) || exit 1; \
	m=$$tmp/node_modules; d=web/vendor/echarts; \
	cp $$m/echarts/dist/echarts.min.js $$m/echarts/LICENSE $$m/echarts/NOTICE $$m/echarts/licenses/LICENSE-d3 $$d/; \
	cp $$m/zrender/LICENSE $$d/LICENSE-zrender; cp $$m/tslib/LICENSE.txt $$d/LICENSE-tslib; \
	echo "echarts $(ECHARTS_VERSION) zrender $$(node -p "require('$$m/zrender/package.json').version") tslib $$(node -p "require('$$m/tslib/package.json').version")"; \
	sha256sum $$d/echarts.min.js; \
	rm -rf $$tmp
	@echo "update web/vendor/echarts/VERSION with the lines above"

# Rewrites docs/img/lab.png from the browser test.
lab-screenshot: test-deps
	LAB_SCREENSHOT=docs/img/lab.png $(GO) test ./lab -run 'TestBrowser$$' -count=1 -v
