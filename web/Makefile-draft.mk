# Lab targets for the Makefile (draft by the lab's engineer; the lead merges).
# Usable as is for a try: make -f Makefile -f web/Makefile-draft.mk lab
#
# What changes in the Makefile:
#   - `build` builds the WebAssembly registry first (go:embed picks it up
#     from web/static/wasm/) and stamps the revision into the binaries;
#   - `lab` serves the lab (it verified the captures until now: keep that in
#     `verify`);
#   - `test` also runs the server and the store under the race detector
#     (about 50 s on 2 cores) and sets CI=true in .ci/run so that the
#     browser tests fail instead of skipping when Chromium is missing.

WASM_DIR        := web/static/wasm
GOROOT_WASM      = $(shell $(GO) env GOROOT)/lib/wasm
# The revision recorded with every run (sim.Build): -buildvcs is off in this
# workspace's GOFLAGS, and the js build never has it, so stamp it.
REVISION        ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
LAB_LDFLAGS     := -X github.com/fp8lab/fp8lab/sim.buildRevision=$(REVISION)
ECHARTS_VERSION ?= 5.6.0

.PHONY: lab lab-wasm build vendor-echarts lab-screenshot test-lab

# The experiment registry for the page's Web Worker, and the wasm_exec.js of
# the same Go (they must match).
lab-wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags '$(LAB_LDFLAGS)' -o $(WASM_DIR)/lab.wasm ./wasm
	cp "$(GOROOT_WASM)/wasm_exec.js" $(WASM_DIR)/wasm_exec.js

build: lab-wasm
	$(GO) build -ldflags '$(LAB_LDFLAGS)' -o bin/lab ./cmd/lab

lab: build
	./bin/lab serve -addr $(ADDR) -data $(DATA)

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

# The lab's tests alone: API, streams, load, crash, browser (headless
# Chromium), then the server and the store under the race detector.
test-lab: test-deps
	$(GO) test -count=1 ./lab/... ./cmd/lab ./sim ./wasm
	$(GO) test -race -count=1 ./lab/... ./cmd/lab

# In `test`, after the existing lines:
#	$(GO) test -race -timeout 10m ./lab/... ./cmd/lab
# and in .ci/run: CI=true make test
