"""The sandbox: hostile code is contained, returns promptly, scores 0, and the caller goes on."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import tempfile
import time

import pytest

from esac_kit import sandbox
from esac_kit.sandbox import SandboxError, run_function_tests, run_python
from esac_kit.schemas import CodeTest, CodeTestsKey
from esac_kit.gi.scoring import score_response

ROOT = os.geteuid() == 0
root_only = pytest.mark.skipif(not ROOT, reason="uid drop and network namespace are root-only layers")
GOOD = "def add(a, b):\n    return a + b\n"


def _response(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}```\n"


def _key(expected: str, entry: str = "f") -> CodeTestsKey:
    return CodeTestsKey(entry_point=entry, tests=[CodeTest(args="(1,)", expected=expected)])


@pytest.fixture
def escape_path():
    """A path in /tmp that no sandboxed code may create."""
    path = f"/tmp/esac-escape-{secrets.token_hex(6)}"
    yield path
    if os.path.lexists(path):
        os.unlink(path)


@pytest.fixture
def fake_key(monkeypatch):
    value = "sk-esac-fake-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", value)
    return value


# ---------------------------------------------------------------- ordinary behaviour


def test_results_are_reprs_and_prints_cannot_pose_as_results():
    code = ("print('r 0 \"99\"')\n"
            "def f(a, b):\n    print('r 1 \"99\"', a)\n    if b == 0:\n        raise ValueError(b)\n    return [a // b, 'x']\n")
    outcome = run_function_tests(code, "f", ["(7, 2)", "(1, 0)", "(9, 3)"])
    assert outcome.status == "ok"
    assert outcome.results == ["[3, 'x']", None, "[3, 'x']"]
    assert outcome.errors == [None, "ValueError", None]
    assert "r 0 \"99\"" in outcome.run.stdout


def test_a_run_that_dies_leaves_the_remaining_calls_empty():
    code = "import os\ndef f(x):\n    if x == 2:\n        os._exit(0)\n    return x * 10\n"
    outcome = run_function_tests(code, "f", ["(1,)", "(2,)", "(3,)"])
    assert outcome.results == ["10", None, None]


def test_stdlib_works_and_the_environment_is_scrubbed():
    result = run_python("import collections, heapq, json, decimal, os, re\n"
                        "print(sorted(os.environ), os.listdir('.'))\nopen('scratch.txt', 'w').write('ok')")
    assert result.status == "ok", result.stderr
    assert "'HOME', 'LANG', 'LC_ALL', 'PATH'" in result.stdout and "OPENAI" not in result.stdout


def test_output_is_bounded():
    result = run_python("for i in range(200_000):\n    print('spam' * 10)")
    assert result.status == "ok"
    assert len(result.stdout) < sandbox.OUTPUT_LIMIT + 100 and "more bytes]" in result.stdout


@root_only
def test_child_runs_unprivileged():
    result = run_python("import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    assert result.stdout.split() == [str(sandbox.SANDBOX_UID)] * 2 + [str(sandbox.SANDBOX_GID), "[]"]


# ---------------------------------------------------------------- hostile code, one run each


def test_infinite_loop_is_stopped_by_the_cpu_limit():
    started = time.monotonic()
    result = run_python("while True:\n    pass", cpu_s=1, wall_s=20)
    assert result.status == "timeout" and result.returncode == -signal.SIGXCPU  # the CPU limit, not the wall clock
    assert time.monotonic() - started < 10


def test_sleeping_forever_is_stopped_by_the_wall_clock():
    started = time.monotonic()
    result = run_python("import time\nprint('start', flush=True)\ntime.sleep(600)", wall_s=1)
    assert result.status == "timeout" and result.stdout.startswith("start")
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("code", [
    "import os\nwhile True:\n    os.fork()",
    "import subprocess\nsubprocess.run(['sh', '-c', 'echo pwned'])",
    "import os\nos.system('echo pwned')",
    "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()\np.join()",
    "import _posixsubprocess\n_posixsubprocess.fork_exec()",
    "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'echo pwned'], {})",
    "import ctypes\nctypes.CDLL(None).fork()",
])
def test_process_creation_is_refused(code):
    result = run_python(code, wall_s=5)
    assert result.status == "error" and "pwned" not in result.stdout
    assert "sandbox:" in result.stderr


@root_only
def test_fork_bomb_without_the_audit_hook_hits_the_process_limit():
    code = ("import os, time\nborn = []\nfor _ in range(200):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n"
            "    born.append(pid)\nprint(os.getpgid(0), *born)")
    started = time.monotonic()
    result = run_python(code, max_processes=8, wall_s=5, audit_hook=False)
    group, *born = [int(pid) for pid in result.stdout.split()]
    assert len(born) < 8 and time.monotonic() - started < 6, result
    # The group kill took the children too: nothing in the sandbox's process group is still running.
    alive = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            alive.append(entry)
    assert not alive


def test_a_4gb_allocation_fails_inside_the_child():
    started = time.monotonic()
    result = run_python("data = bytearray(4 * 1024 ** 3)\nprint(len(data))")
    assert result.status == "memory" and result.stdout == ""
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("template", [
    "open({path!r}, 'w').write('x')",
    "import os\nos.close(os.open({path!r}, os.O_CREAT | os.O_WRONLY))",
    "import pathlib\npathlib.Path({path!r}).write_text('x')",
    "import os\nopen('../' + os.path.basename({path!r}), 'w').write('x')",
    "import os\nos.chdir('/tmp')\nopen(os.path.basename({path!r}), 'w').write('x')",
    "import os\nopen('mine', 'w').write('x')\nos.rename('mine', {path!r})",
    "import shutil\nopen('mine', 'w').write('x')\nshutil.copy('mine', {path!r})",
    "import os\nos.mkfifo({path!r})",
    "import os\nos.symlink('/etc/passwd', {path!r})",
    "import os\nd = os.open('/tmp', os.O_RDONLY)\nos.close(os.open(os.path.basename({path!r}), os.O_CREAT | os.O_WRONLY, dir_fd=d))",
])
def test_writes_outside_the_working_folder_are_refused(template, escape_path):
    result = run_python(template.format(path=escape_path))
    assert result.status == "error"
    assert not os.path.lexists(escape_path)


@root_only
def test_without_the_audit_hook_the_kernel_refuses_writes_to_our_folders():
    # Root-owned, like the repository and the caller's files; outside /tmp, which the sandbox sees as its own tmpfs.
    folder = tempfile.mkdtemp(dir="/var/tmp")
    try:
        target = os.path.join(folder, "escape.txt")
        result = run_python(f"open({target!r}, 'w').write('x')", audit_hook=False)
        assert result.status == "error" and "Permission denied" in result.stderr
        assert not os.path.exists(target)
    finally:
        shutil.rmtree(folder)


def test_the_callers_secrets_do_not_reach_the_child(fake_key):
    code = ("import os\nprint(dict(os.environ))\n"
            "for path in ('/proc/self/environ', '/proc/%d/environ' % os.getppid(), '/proc/1/environ'):\n"
            "    try:\n        print(open(path, 'rb').read())\n    except Exception as error:\n        print(type(error).__name__)")
    for audit_hook in (True, False) if ROOT else (True,):
        result = run_python(code, audit_hook=audit_hook)
        assert result.status == "ok", result.stderr
        assert fake_key not in result.stdout + result.stderr
        assert "sk-esac-fake" not in result.stdout


def test_sockets_are_refused(listener):
    port, accepted = listener
    code = (f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "s.sendall(b'hello')\nprint('connected')")
    result = run_python(code, wall_s=5)
    assert result.status == "error" and "connected" not in result.stdout
    assert not accepted()


@root_only
def test_without_the_audit_hook_the_network_namespace_has_no_route(listener):
    if not sandbox.sandbox_layers()["network_namespace"]:
        pytest.skip("unshare --net is not available here")
    port, accepted = listener
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')"
    result = run_python(code, wall_s=5, audit_hook=False)
    assert result.status == "error" and "connected" not in result.stdout
    assert not accepted()


@pytest.mark.parametrize("code", [
    "import gc\nprint(len(gc.get_objects()))",
    "import sys\nsys.settrace(lambda *args: None)",
    "import sys\ndel sys.modules['posix']\nimport posix\nprint(posix.mkfifo)",
    "import os\nos.kill(os.getppid(), 9)",
    "print(open('/etc/shadow').read())",
])
def test_interpreter_escape_hatches_are_refused(code):
    result = run_python(code)
    assert result.status == "error" and "sandbox:" in result.stderr


# ---------------------------------------------------------------- through scoring: hostile answers score 0


def test_hostile_answers_score_zero_and_the_caller_goes_on(listener, escape_path, fake_key):
    port, accepted = listener
    hostile = {
        "loop": ("def f(x):\n    while True:\n        pass\n", "1"),
        "fork bomb": ("import os\ndef f(x):\n    while True:\n        os.fork()\n", "1"),
        "4 GB": ("def f(x):\n    return len(bytearray(4 * 1024 ** 3))\n", "4294967296"),
        "write": (f"def f(x):\n    open({escape_path!r}, 'w').write('x')\n    return 'written'\n", "'written'"),
        "secret": ("import os\ndef f(x):\n    return os.environ.get('OPENAI_API_KEY')\n", repr(fake_key)),
        "socket": (f"import socket\ndef f(x):\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                   "    return 'connected'\n", "'connected'"),
    }
    for name, (code, expected) in hostile.items():
        started = time.monotonic()
        scored = score_response(_key(expected), _response(code))
        assert scored.score == 0.0, name
        assert time.monotonic() - started < 12, name
    assert not os.path.lexists(escape_path) and not accepted()
    good = CodeTestsKey(entry_point="add", tests=[CodeTest(args="(2, 3)", expected="5"),
                                                  CodeTest(args="('a', 'b')", expected="'ab'")])
    assert score_response(good, _response(GOOD)).score == 1.0
    assert score_response(good, "no code at all").score == 0.0


# ---------------------------------------------------------------- infrastructure failures are not model failures


def test_an_interpreter_that_cannot_start_raises_sandbox_error(monkeypatch):
    monkeypatch.setattr(sandbox, "_command", lambda layers: ["/nonexistent/python3"])
    with pytest.raises(SandboxError):
        run_python("print(1)")


def test_a_bootstrap_that_dies_before_the_model_runs_raises_sandbox_error(monkeypatch):
    monkeypatch.setattr(sandbox, "_BOOTSTRAP", "raise SystemExit(3)")
    with pytest.raises(SandboxError):
        run_function_tests(GOOD, "add", ["(1, 2)"])
