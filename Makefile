# The two commands of the README: `make demo` and `make test`. Everything else supports them.
BUILD      ?= build
BUILD_SAN  ?= build-asan
BUILD_FUZZ ?= build-fuzz
BUILD_TSAN ?= build-tsan
JOBS       ?= $(shell nproc)
PYTHON     ?= python3
PY_VENV    ?= $(BUILD)/venv
CMAKE_FLAGS ?=
# Paths relative to the checkout in ccache keys, so fresh clones reuse earlier compilations.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
# Five build trees (main, ASan, TSan, fuzz, GPU fallback) outgrow ccache's default 5 GB, and an
# evicted tree costs a CI run its whole compile time again.
export CCACHE_MAXSIZE ?= 20G

.PHONY: all deps build build-asan build-tsan demo test check-layers check-style test-unit test-heavy python test-python test-asan test-tsan test-fuzz bench format gpu-check gpu-deps gpu-bundle gpu-rehearse onnx-corpus clean

all: build

deps:
	@scripts/install-deps.sh

# The main build includes the Python extension (nanobind from $(PY_VENV)), laid out as a package in
# $(BUILD)/python: the Python tests use it, so `make test` compiles the library once for both.
$(BUILD)/build.ninja: CMakeLists.txt | deps $(PY_VENV)/.requirements
	cmake -S . -B $(BUILD) -G Ninja -DWEFT_WERROR=ON -DWEFT_BUILD_PYTHON=ON \
	  -DPython_EXECUTABLE=$(abspath $(PY_VENV))/bin/python $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j$(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)/weft

# Test tiers are ctest labels that each test file declares beside its tests (tests/tiers.h):
# unit, golden, property, gpu; loads_generated and heavy (run in the optimized build, not under
# ASan), tsan (run under ThreadSanitizer). `ctest -L NAME` runs one tier.

# Everything CI runs, what fails soonest first: the include-layering and style checks (seconds),
# the main build with the Python tests on it, the GPU check's rehearsal, a short fuzz run, the
# tests under ASan+UBSan, the tsan tier under TSan, and the loads_generated and heavy tiers in the
# optimized build. Each test runs once, in the strictest build that runs it in reasonable time
# (`make test-unit` runs the whole suite in the optimized build).
test: check-layers check-style test-python gpu-rehearse test-fuzz test-asan test-tsan test-heavy

# No #include against the layer order of scripts/layers.txt (also a ctest test).
check-layers:
	scripts/check-layers.sh

# Every C++/CUDA source formatted by clang-format (`make format` fixes it), no source file over 800
# lines and no function over 150 unless scripts/size-exceptions.txt says why (also ctest tests).
check-style:
	scripts/check-format.sh
	scripts/check-sizes.sh

test-unit: build
	ctest --test-dir $(BUILD) -j$(JOBS) --output-on-failure

# A virtual environment under $(BUILD) with the extension's build requirements (read from
# pyproject.toml), made once.
$(PY_VENV)/.requirements: pyproject.toml | deps
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires']))" > $@.tmp
	$(PY_VENV)/bin/pip install -q -r $@.tmp
	mv $@.tmp $@

# The package's own dependencies and test extras (pyproject.toml) and the test oracles
# (tests/python/requirements.txt: onnx, onnxruntime), never weft's own dependencies.
$(PY_VENV)/.test-requirements: pyproject.toml tests/python/requirements.txt $(PY_VENV)/.requirements
	$(PY_VENV)/bin/python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['test']))" > $@.tmp
	$(PY_VENV)/bin/pip install -q -r $@.tmp -r tests/python/requirements.txt
	mv $@.tmp $@

# `pip install .` into the venv, as a user installs the package (a build of its own, in
# $(BUILD)/python-venv; not part of `make test`, whose Python tests use the main build's package).
python: deps $(PY_VENV)/.requirements $(PY_VENV)/.test-requirements
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY_VENV)/bin/pip install -q --no-build-isolation \
	  --config-settings=build-dir=$(BUILD)/python-venv '.[test]'

# The Python tests (tests/python) on the package of the main build ($(BUILD)/python); the CLI
# comparison runs $(BUILD)/weft.
test-python: build $(PY_VENV)/.test-requirements
	PYTHONPATH=$(abspath $(BUILD))/python WEFT_BINARY=$(BUILD)/weft \
	  $(PY_VENV)/bin/python -m pytest -q tests/python

# The corpus of real exporter output (examples/onnx/corpus, docs/onnx.md): PyTorch, transformers and
# torchvision in a venv of their own, only to regenerate it; never part of `make test` or CI.
CORPUS_VENV ?= $(BUILD)/corpus-venv
$(CORPUS_VENV)/.requirements: scripts/onnx_corpus_requirements.txt
	$(PYTHON) -m venv $(CORPUS_VENV)
	$(CORPUS_VENV)/bin/pip install -q -r scripts/onnx_corpus_requirements.txt
	touch $@

onnx-corpus: $(CORPUS_VENV)/.requirements
	$(CORPUS_VENV)/bin/python scripts/onnx_corpus.py

# ASan+UBSan at -O1 (with debug info), as the sanitizers' authors advise: about twice as fast as -O0
# and the same reports. Built with clang: GCC 12 takes 2.5x as long to compile the same file with
# these sanitizers (39 s against 15 s for tools/weft/cmd_mpk.cpp), the largest part of a cold CI
# run; and a second compiler's -Wall -Wextra -Werror catches what GCC's does not.
build-asan: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_SAN) -G Ninja -DWEFT_WERROR=ON -DWEFT_SANITIZE=address,undefined \
	  -DWEFT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG='-g -O1' \
	  $(CMAKE_FLAGS) >/dev/null
	ninja -C $(BUILD_SAN) -j$(JOBS)

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD_SAN) -j$(JOBS) --output-on-failure -LE 'loads_generated|heavy'

# The tiers that run in the optimized build: loads_generated (their subject is code weft generated,
# which ASan does not instrument, run by hundreds of emulated GPU threads: 25-300 s each under
# ASan, where LeakSanitizer's tracer can also crash at exit) and heavy (minutes under ASan,
# or wall-clock assertions its slowness distorts).
test-heavy: build
	ctest --test-dir $(BUILD) -j$(JOBS) --output-on-failure -L 'loads_generated|heavy'

# The parallel parts (search, oracle, verifier, symbolic prover, the task-graph runtime: the tests
# of the tsan tier) under ThreadSanitizer; the TSan build compiles only the test files of that tier,
# without oneDNN (its OpenMP runtime is not instrumented: TSan would report its barriers).
build-tsan: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_TSAN) -G Ninja -DWEFT_WERROR=ON -DWEFT_SANITIZE=thread \
	  -DWEFT_ONEDNN=OFF -DWEFT_TEST_TIER=tsan -DWEFT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  $(CMAKE_FLAGS) >/dev/null
	ninja -C $(BUILD_TSAN) -j$(JOBS)

test-tsan: build-tsan
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --test-dir $(BUILD_TSAN) -j$(JOBS) --output-on-failure -L tsan

test-fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -G Ninja -DWEFT_BUILD_FUZZ=ON \
	  -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=Debug >/dev/null
	ninja -C $(BUILD_FUZZ) -j$(JOBS) parse_fuzzer model_fuzzer
	scripts/run-fuzzer.sh $(BUILD_FUZZ)/parse_fuzzer
	scripts/run-fuzzer.sh $(BUILD_FUZZ)/model_fuzzer

bench: build
	scripts/run-benchmarks.sh $(BUILD)

# The one command for a GPU machine (scripts/gpu-check.sh), sized to one device call (at most 8
# minutes on one H100): the steps that return the most first, each under its own limit, summary.md
# copied to $$OUT after each. GPU_CHECK_PART=full runs the long sweeps. It uses the binaries of
# `make gpu-bundle` (carry .gpu-bundle), else builds weft there from .gpu-deps.
gpu-check:
	JOBS=$(JOBS) scripts/gpu-check.sh

# weft and weft_tests with the shared libraries they need, in .gpu-bundle/ (carried to a GPU
# machine that has no package registry: run(carry=[".gpu-bundle"])).
gpu-bundle: build
	scripts/gpu-bundle.sh $(BUILD)

# The build dependencies as Debian packages in .gpu-deps/, for gpu-check's fallback build on a GPU
# machine without a package registry (unpacked there into a private prefix).
gpu-deps:
	scripts/gpu-deps.sh fetch

# The GPU check rehearsed without a GPU (part of `make test`): the bundle, the fallback build from
# the carried packages alone, the script's dry run, and negative controls (scripts/gpu-rehearse.sh).
gpu-rehearse: build
	scripts/gpu-rehearse.sh $(BUILD)

format:
	clang-format -i $$(git ls-files --cached --others --exclude-standard -- '*.h' '*.cpp' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ) $(BUILD_TSAN)
