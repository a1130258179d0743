# fp8lab — two commands do all the set-up on a fresh machine:
#   make lab    build what the lab needs and serve it on http://127.0.0.1:8080
#   make test   install what the tests need (Debian packages, only when missing) and run every test
SHELL := /bin/bash
GO ?= go
GOLDEN ?= ../shared/golden/h200
MMASIM ?= ../shared/golden/mmasim
KHATTAK ?= ../shared/golden/khattak
ADDR ?= 127.0.0.1:8080
DATA ?= data

WASM_DIR        := web/static/wasm
GOROOT_WASM      = $(shell $(GO) env GOROOT)/lib/wasm
# The revision recorded with every run (sim.Build): stamped, since -buildvcs
# may be off and the js build never has it. tools/revision.sh: the full
# hash, +dirty when a tracked file differs or an untracked one is there.
REVISION        ?= $(shell sh tools/revision.sh)
LAB_LDFLAGS     := -X github.com/fp8lab/fp8lab/sim.buildRevision=$(REVISION)
ECHARTS_VERSION ?= 5.6.0

# The Python package (python/): its shared library, built from capi/, and
# the interpreter it is installed for and tested with: the first of python3
# and Debian's /usr/bin/python3 that has NumPy.
PYLIB   := python/fp8lab/libfp8lab.so
PYTHON  ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import numpy' >/dev/null 2>&1 && { command -v $$p; break; }; done)

.PHONY: lab build lab-wasm wasm-kernels verify verify-exhaustive test test-cold test-deps vet bench fuzz vendor-echarts lab-screenshot gpucheck python python-lib python-deps test-python bench-python

# The experiment registry for the page's Web Worker, and the wasm_exec.js of
# the same Go (they must match); go:embed picks them up from web/static/wasm.
lab-wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags '$(LAB_LDFLAGS)' -o $(WASM_DIR)/lab.wasm ./wasm
	cp "$(GOROOT_WASM)/wasm_exec.js" $(WASM_DIR)/wasm_exec.js

build: lab-wasm
	$(GO) build -ldflags '$(LAB_LDFLAGS)' -o bin/lab ./cmd/lab

# A private XDG_RUNTIME_DIR when there is none, as for make test:
# lavapipe's window-system probe logs "XDG_RUNTIME_DIR is invalid" on every
# GPU run without one.
lab: build
	@if [ -z "$$XDG_RUNTIME_DIR" ] || [ ! -d "$$XDG_RUNTIME_DIR" ]; then \
		export XDG_RUNTIME_DIR=$$(mktemp -d); chmod 700 $$XDG_RUNTIME_DIR; \
	fi; \
	exec ./bin/lab serve -addr $(ADDR) -data $(DATA)

# Every ground-truth file: the H200 captures (shared and fp8lab's own), the
# seven GPUs' published outputs, and the MMA-Sim peer records.
VERIFY_PATHS = $(GOLDEN) testdata/h200-fresh $(KHATTAK) $(MMASIM)

verify: build
	./bin/lab verify $(VERIFY_PATHS)

verify-exhaustive: build
	./bin/lab verify -exhaustive $(GOLDEN)/fp8_convert.txt

# Debian packages the tests need: lavapipe (Vulkan on the CPU) for the WGSL
# tests, Chromium for the browser tests, NumPy for the tests that read files
# np.save writes (attention-file) and for the Python package, Node.js for
# the tests that run the WebAssembly build (TestWasmEqualsNative), wabt's
# wat2wasm for the check that the embedded WebAssembly kernels are the build
# of their sources (TestWasmKernelsBuilt), pytest, pip and setuptools for
# the Python package's tests and install. Installed only when missing.
test-deps:
	@missing=""; \
	for p in mesa-vulkan-drivers libvulkan1 chromium python3-numpy nodejs wabt python3-pytest python3-pip python3-setuptools; do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			-o Dpkg::Use-Pty=0 $$missing >/dev/null || exit 1; \
	fi

# The hand-written WebAssembly kernels of the js/wasm build (internal/wasmk):
# each .wat source built into the .wasm file beside it, which go:embed
# takes (committed, so that a build needs no wat2wasm; TestWasmKernelsBuilt
# checks that they match).
WASM_KERNELS = $(patsubst %.wat,%.wasm,$(wildcard */wasmk/*.wat */*/wasmk/*.wat))
wasm-kernels: $(WASM_KERNELS)
%.wasm: %.wat
	wat2wasm --debug-names $< -o $@

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./fp8/... ./accum/... ./attention/... ./sim/... ./experiments/... ./wasm/... ./internal/...

# Every test, natively and with -race on the concurrent packages; the race
# run happens even when the plain one failed, and both results are reported.
# A fresh Mesa shader cache (as on a fresh machine: lavapipe compiles every
# shader) and a private XDG_RUNTIME_DIR (lavapipe's window-system probe
# complains without one) for the run.
test: test-deps vet
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	export XDG_RUNTIME_DIR=$$tmp/xdg MESA_SHADER_CACHE_DIR=$$tmp/mesa; mkdir -m 700 $$XDG_RUNTIME_DIR; \
	plain=0; $(GO) test -timeout 20m ./... || plain=$$?; \
	$(GO) run ./cmd/lab verify $(VERIFY_PATHS) >$$tmp/verify.txt 2>&1 || { plain=1; tail -n 40 $$tmp/verify.txt; }; \
	echo "lab verify: $$(tail -n 1 $$tmp/verify.txt)"; \
	race=0; $(GO) test -race -timeout 10m ./sim/... ./lab/... ./cmd/lab ./capi || race=$$?; \
	$(GO) test -race -timeout 10m -run '^(TestNormalsPCG|TestPCGAdvance|TestSimDecodeBatch|TestSimDecodeBatchConcurrent|TestSimPackedCache|TestOpenAsync|TestUploadPieces|TestRunHeadsParallel|TestReferenceHeadsParallel|TestRunSharedEqualsRunPromotions|TestReferenceQuantizedTrials|TestSetTokensBlocks)$$' ./internal/pmath ./wgsl ./attention || race=$$?; \
	$(GO) test -race -timeout 10m -run '^TestSharedGPU' ./experiments || race=$$?; \
	py=0; $(MAKE) --no-print-directory test-python || py=$$?; \
	echo "make test: plain tests exit $$plain, race tests exit $$race, Python tests exit $$py"; \
	[ $$plain = 0 ] && [ $$race = 0 ] && [ $$py = 0 ]

# The Python package from NumPy's side: pytest over python/tests with the
# library built here (no install needed; one test installs it with pip
# into a temporary folder, offline).
test-python: python-lib
	@test -n "$(PYTHON)" || { echo "no python3 with NumPy (apt-get install python3-numpy; make test-deps does)"; exit 1; }
	cd python && PYTHONPATH=$(CURDIR)/python GO=$(GO) $(PYTHON) -m pytest -q -p no:cacheprovider -rs tests ../tools/bench/test_trace_regions.py ../tools/bench/test_lab_table.py ../tools/bench/test_gpu_cpu_scale.py

# The Debian packages of the Python package alone (make python).
python-deps:
	@missing=""; \
	for p in python3-numpy python3-pip python3-setuptools; do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			-o Dpkg::Use-Pty=0 $$missing >/dev/null || exit 1; \
	fi

# The shared library the package loads (go build -buildmode=c-shared).
python-lib:
	$(GO) build -buildmode=c-shared -ldflags '$(LAB_LDFLAGS)' -o $(PYLIB) ./capi

# Builds the library and installs the package for $(PYTHON), offline (pip
# with no index; the package's build backend needs nothing but Go). Debian
# marks its Python as externally managed: outside a virtual environment
# pip installs under /usr/local, beside Debian's packages, not over them.
python: python-deps python-lib
	@py="$(PYTHON)"; test -n "$$py" || py=/usr/bin/python3; \
	PIP_BREAK_SYSTEM_PACKAGES=1 $$py -m pip install -q --no-index --no-deps --force-reinstall ./python && \
	echo "fp8lab installed for $$py: $$py -c 'import fp8lab; print(fp8lab.info()[\"version\"])'"

# fp8lab from Python beside the Go benchmark, in the same session (BENCHMARKS.md).
bench-python: python-lib
	$(GO) test ./accum -run '^$$' -bench 'Chain$$/sm90.wgmma.e4m3.f32$$' -cpu 1 -benchtime 2s -count 3
	cd python && PYTHONPATH=$(CURDIR)/python $(PYTHON) bench.py

# The WebGPU tests 10 times, each with an empty shader cache (issue: the
# fresh-machine segmentation faults); about 1 to 2 minutes a run on 2 cores.
test-cold: test-deps
	tools/wgsl-cold.sh 10

bench:
	$(GO) test ./accum -run '^$$' -bench . -benchtime 2s
	$(GO) test ./attention -run '^$$' -bench Decode -benchtime 5x

fuzz:
	$(GO) test ./fp8 -run '^$$' -fuzz '^FuzzEncodeE4M3$$' -fuzztime 30s
	$(GO) test ./fp8 -run '^$$' -fuzz '^FuzzEncodeE5M2$$' -fuzztime 30s
	for f in E2M1 E2M3 E3M2 UE4M3 UE8M0 E4M3FNUZ E5M2FNUZ; do $(GO) test ./fp8 -run '^$$' -fuzz "^FuzzEncode$$f\$$" -fuzztime 15s || exit 1; done
	$(GO) test ./accum/golden -run '^$$' -fuzz FuzzParseRecords -fuzztime 30s
	$(GO) test ./accum/golden -run '^$$' -fuzz FuzzParseLong -fuzztime 30s
	$(GO) test ./accum/golden -run '^$$' -fuzz FuzzParseConvert -fuzztime 30s
	$(GO) test ./lab/runquery -run '^$$' -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./lab/sweep -run '^$$' -fuzz FuzzParseSeeds -fuzztime 30s

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

# Rewrites docs/img/lab.png from the browser test, and docs/img/NAME.png,
# the chart of every experiment's default run (minutes of CPU).
lab-screenshot: test-deps
	LAB_SCREENSHOT=docs/img/lab.png $(GO) test ./lab -run 'TestBrowser$$' -count=1 -v
	LAB_SCREENSHOTS=docs/img $(GO) test ./lab -run 'Test(Screenshots|ViewScreenshots|BrowserCharts|BrowserSweep)$$' -count=1 -v -timeout 60m
