# Two commands do everything on a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test setup verify clean

# One-time set-up: the kit, its test tools and the embedded model (llama-cpp-python compiles once, ~7 min on 2 cores; pip caches the wheel).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,dev]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: ESAC-GI's public pool on the embedded model, judged by it (an unofficial development run).
run: $(STAMP)
	$(VENV)/bin/esac items
	$(VENV)/bin/esac run

# Every parametrized GI item over 200 public seeds, and every AG task's scripted agents over 50.
verify: $(STAMP)
	$(VENV)/bin/esac verify
	$(VENV)/bin/esac verify --suite ag

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
