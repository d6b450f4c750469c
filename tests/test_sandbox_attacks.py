"""Attacks on the sandbox, each pinned by a test that asserts it was contained: no secret came back, no file
appeared, no connection or signal arrived, no process or folder outlived the kit.

Most run twice: with the audit-hook tripwire, and kernel-only (audit_hook=False), which proves the kernel walls
hold on their own.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

import pytest

from esac_kit import sandbox
from esac_kit.errors import ConfigError
from esac_kit.sandbox import SandboxUnavailable, run_function_tests, run_python

ROOT = os.geteuid() == 0
both = pytest.mark.parametrize("audit_hook", [True, False], ids=["with-tripwire", "kernel-only"])
OUTSIDE = "/var/tmp"  # outside /tmp, which the sandbox sees as its own tmpfs: these files are really there


@pytest.fixture
def secret_seed():
    """A world-readable secret in a world-readable folder outside the work folder: only the sandbox may stop it."""
    folder = tempfile.mkdtemp(dir=OUTSIDE, prefix="esac-test-seed-")
    os.chmod(folder, 0o755)
    value = "esac-secret-seed-" + secrets.token_hex(12)
    path = os.path.join(folder, "seed.txt")
    with open(path, "w") as handle:
        handle.write(value)
    os.chmod(path, 0o644)
    yield path, value
    shutil.rmtree(folder)


@pytest.fixture
def item_pack():
    """A temporary item pack holding a secret string, readable by anyone the kernel's ownership checks let in."""
    folder = tempfile.mkdtemp(dir=OUTSIDE, prefix="esac-test-pack-")
    os.chmod(folder, 0o755)
    value = "esac-secret-answer-" + secrets.token_hex(12)
    path = os.path.join(folder, "items.toml")
    with open(path, "w") as handle:
        handle.write(f'[[item]]\nanswer = "{value}"\n')
    os.chmod(path, 0o644)
    yield path, value
    shutil.rmtree(folder)


@pytest.fixture
def open_folder():
    """A world-writable folder outside the work folder: ownership alone would let the sandbox write there."""
    folder = tempfile.mkdtemp(dir=OUTSIDE, prefix="esac-test-open-")
    os.chmod(folder, 0o777)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def landlock_alone(monkeypatch):
    """Runs with seccomp and the namespaces switched off, so that Landlock's own network rules and scopes are tested."""
    layers = {**sandbox.sandbox_layers(), "seccomp": False, "network_namespace": False, "mount_namespace": False}
    monkeypatch.setattr(sandbox, "sandbox_layers", lambda: layers)


def _last_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    return lines[-1] if lines else ""


# ---------------------------------------------------------------- reading outside the work folder


@both
def test_dir_fd_read_of_etc_passwd_after_a_deeper_chdir(audit_hook):
    code = ("import os\nw = os.open('.', os.O_RDONLY)\nos.makedirs('a/b/c/d/e/f')\nos.chdir('a/b/c/d/e/f')\n"
            "fd = os.open('../../../../../../etc/passwd', os.O_RDONLY, dir_fd=w)\nprint(os.read(fd, 4096))")
    result = run_python(code, audit_hook=audit_hook)
    assert result.status == "error" and "root:" not in result.stdout
    assert "PermissionError" in _last_error(result)


@both
@pytest.mark.parametrize("code", [
    "import os\nd = os.open('.', os.O_RDONLY)\nprint(os.listdir(os.open('..', os.O_RDONLY, dir_fd=d)))",
    "import os\nd = os.open('.', os.O_RDONLY)\n"
    "print(os.read(os.open('../' * 12 + 'etc/passwd', os.O_RDONLY, dir_fd=d), 4096))",
    "import os\nd = os.open('/', os.O_PATH)\nprint(os.read(os.open('etc/passwd', os.O_RDONLY, dir_fd=d), 4096))",
    "import os\nd = os.open('/etc', os.O_RDONLY | os.O_DIRECTORY)\nprint(os.listdir(d))",
    "import os\nd = os.open('.', os.O_RDONLY)\nos.chdir('/')\nprint(os.listdir('.'))",
], ids=["parent-listing", "dotdot-chain", "o-path-root", "etc-descriptor", "chdir-root"])
def test_a_directory_descriptor_opens_nothing_outside_the_work_folder(code, audit_hook):
    result = run_python(code, audit_hook=audit_hook)
    assert result.status == "error"
    assert "root:" not in result.stdout and "passwd" not in result.stdout and "esac-sandbox" not in result.stdout


@both
def test_symlink_in_the_work_folder_to_etc_passwd_reads_nothing(audit_hook):
    result = run_python("import os\nos.symlink('/etc/passwd', 'link')\nprint(open('link').read())",
                        audit_hook=audit_hook)
    assert result.status == "error" and "root:" not in result.stdout


@both
def test_symlink_in_the_work_folder_to_an_item_pack_reads_nothing(item_pack, audit_hook):
    path, value = item_pack
    result = run_python(f"import os\nos.symlink({path!r}, 'pack')\nprint(open('pack').read())", audit_hook=audit_hook)
    assert result.status == "error" and value not in result.stdout + result.stderr


@both
def test_hard_link_to_an_item_pack_reads_nothing(item_pack, audit_hook):
    path, value = item_pack
    result = run_python(f"import os\nos.link({path!r}, 'pack')\nprint(open('pack').read())", audit_hook=audit_hook)
    assert result.status == "error" and value not in result.stdout + result.stderr


@both
@pytest.mark.parametrize("how", ["absolute", "relative"])
def test_world_readable_secret_seed_outside_the_work_folder_stays_unread(secret_seed, audit_hook, how):
    path, value = secret_seed
    target = repr(path) if how == "absolute" else f"'../' * 12 + {path.lstrip('/')!r}"
    result = run_python(f"print(open({target}).read())", audit_hook=audit_hook)
    assert result.status == "error" and value not in result.stdout + result.stderr
    assert "PermissionError" in _last_error(result)


@both
def test_a_hidden_test_call_cannot_return_a_secret_from_outside(secret_seed, audit_hook):
    path, value = secret_seed
    code = f"def f(x):\n    return open({path!r}).read()\n"
    outcome = run_function_tests(code, "f", ["(1,)"], audit_hook=audit_hook)
    assert outcome.results == [None] and outcome.errors == ["PermissionError"]
    assert value not in outcome.run.stdout + outcome.run.stderr


@both
def test_listing_the_root_folder_shows_nothing(audit_hook):
    result = run_python("import os\nprint(sorted(os.listdir('/')))", audit_hook=audit_hook)
    assert result.status == "error" and "etc" not in result.stdout and "usr" not in result.stdout


@both
def test_reading_the_kits_files_through_proc_is_refused(audit_hook):
    code = "import os\nprint(open('/proc/%d/cmdline' % os.getppid(), 'rb').read())"
    result = run_python(code, audit_hook=audit_hook)
    assert result.status == "error" and "pytest" not in result.stdout


@both
def test_packages_installed_beside_the_stdlib_stay_unread(audit_hook):
    readme = os.path.join(sysconfig.get_paths(vars={"base": sys.base_prefix})["purelib"], "README.txt")
    if not os.path.isfile(readme):
        pytest.skip("the base interpreter's site-packages has no README.txt here")
    with open(readme) as handle:
        line = handle.readline().strip()
    code = ("import os, sys\nfor folder in sys.path:\n    try:\n"
            "        print(open(os.path.join(folder, 'site-packages', 'README.txt')).read())\n"
            "    except OSError as error:\n        print(type(error).__name__)")
    result = run_python(code, audit_hook=audit_hook)
    assert line and line not in result.stdout and "PermissionError" in result.stdout


# ---------------------------------------------------------------- writing outside the work folder


@both
def test_writing_into_tmp_creates_nothing(audit_hook):
    path = f"/tmp/esac-escape-{secrets.token_hex(6)}"
    try:
        result = run_python(f"open({path!r}, 'w').write('x')", audit_hook=audit_hook)
        assert result.status == "error" and not os.path.lexists(path)
    finally:
        if os.path.lexists(path):
            os.unlink(path)


@both
def test_writing_into_the_parents_cwd_creates_nothing(open_folder, monkeypatch, audit_hook):
    monkeypatch.chdir(open_folder)  # the kit's cwd, writable by anyone as far as file ownership goes
    code = (f"import os\nfor path in ({os.getcwd()!r} + '/escape.txt', '../' * 12 + {open_folder.lstrip('/')!r}"
            " + '/relative.txt'):\n    try:\n        open(path, 'w').write('x')\n        print('wrote', path)\n"
            "    except OSError as error:\n        print(type(error).__name__)")
    result = run_python(code, audit_hook=audit_hook)
    assert "wrote" not in result.stdout and os.listdir(open_folder) == []


@both
def test_executing_a_file_written_in_the_work_folder_is_refused(audit_hook):
    code = ("import os\nopen('run.sh', 'w').write('#!/bin/sh\\necho pwned\\n')\nos.chmod('run.sh', 0o755)\n"
            "os.execv('run.sh', ['run.sh'])")
    result = run_python(code, audit_hook=audit_hook)
    assert result.status == "error" and "pwned" not in result.stdout


# ---------------------------------------------------------------- the network


@both
def test_tcp_connect_to_a_local_server_never_arrives(listener, audit_hook):
    port, accepted = listener
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')"
    result = run_python(code, wall_s=5, audit_hook=audit_hook)
    assert result.status == "error" and "connected" not in result.stdout
    assert not accepted()


@both
def test_binding_a_tcp_socket_is_refused(audit_hook):
    code = "import socket\ns = socket.socket()\ns.bind(('0.0.0.0', 0))\ns.listen()\nprint('bound', s.getsockname())"
    result = run_python(code, audit_hook=audit_hook)
    assert result.status == "error" and "bound" not in result.stdout


@both
def test_udp_datagram_to_a_local_server_never_arrives(audit_hook):
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.settimeout(0.3)
    port = server.getsockname()[1]
    code = (f"import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"s.sendto(b'exfiltrated', ('127.0.0.1', {port}))\nprint('sent')")
    try:
        result = run_python(code, audit_hook=audit_hook)
        assert result.status == "error" and "sent" not in result.stdout
        with pytest.raises(OSError):
            server.recvfrom(100)
    finally:
        server.close()


@both
def test_abstract_unix_socket_of_the_host_is_unreachable(audit_hook):
    name = "\0esac-test-" + secrets.token_hex(6)
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen()
    server.settimeout(0.3)
    code = f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({name!r})\nprint('connected')"
    try:
        result = run_python(code, audit_hook=audit_hook)
        assert result.status == "error" and "connected" not in result.stdout
        with pytest.raises(OSError):
            server.accept()
    finally:
        server.close()


@both
def test_named_unix_socket_open_to_anyone_is_unreachable(open_folder, audit_hook):
    path = os.path.join(open_folder, "bus.sock")  # like a syslog or bus socket: ownership alone lets anyone in
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    os.chmod(path, 0o777)
    server.listen()
    server.settimeout(0.3)
    code = f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({path!r})\nprint('connected')"
    try:
        result = run_python(code, audit_hook=audit_hook)
        assert result.status == "error" and "connected" not in result.stdout
        with pytest.raises(OSError):
            server.accept()
    finally:
        server.close()


def test_landlock_alone_refuses_tcp_connect_and_bind(listener, landlock_alone):
    port, accepted = listener
    code = (f"import socket\nfor call in (lambda: socket.create_connection(('127.0.0.1', {port}), timeout=2),\n"
            "             lambda: socket.socket().bind(('127.0.0.1', 0))):\n    try:\n        call()\n"
            "        print('done')\n    except OSError as error:\n        print(type(error).__name__)")
    result = run_python(code, audit_hook=False)
    assert result.stdout.split() == ["PermissionError", "PermissionError"] and "seccomp" not in result.layers
    assert not accepted()


def test_landlock_alone_keeps_the_hosts_abstract_unix_socket_out_of_reach(landlock_alone):
    name = "\0esac-test-" + secrets.token_hex(6)
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen()
    server.settimeout(0.3)
    code = f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({name!r})\nprint('connected')"
    try:
        result = run_python(code, audit_hook=False)
        assert result.status == "error" and "connected" not in result.stdout
        with pytest.raises(OSError):
            server.accept()
    finally:
        server.close()


# ---------------------------------------------------------------- signals


_SIGNAL_HELPER = """
import json, signal, sys, time
from esac_kit.sandbox import run_python
arrived = []
signal.signal(signal.SIGTERM, lambda *_: arrived.append(1))
result = run_python(sys.argv[1], audit_hook=sys.argv[2] == "1")
time.sleep(0.2)
print(json.dumps({"arrived": bool(arrived), "status": result.status, "stdout": result.stdout}))
"""


@both
def test_sigterm_to_the_parent_never_arrives(audit_hook):
    code = "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)\nprint('sent')"
    helper = subprocess.run([sys.executable, "-c", _SIGNAL_HELPER, code, "1" if audit_hook else "0"],
                            capture_output=True, text=True, timeout=30)
    assert helper.returncode == 0, helper.stderr
    report = json.loads(helper.stdout)
    assert not report["arrived"] and report["status"] == "error" and "sent" not in report["stdout"]


def test_a_signal_to_another_sandbox_run_is_refused_by_the_kernel():
    if not sandbox.sandbox_layers()["landlock_scopes"]:
        pytest.skip("Landlock signal scoping needs ABI 6")
    marker = "victim-" + secrets.token_hex(6)
    victim: dict = {}
    code = f"import os, time\nos.mkdir({marker!r})\nos.chdir({marker!r})\ntime.sleep(1.0)\nprint('survived')"
    thread = threading.Thread(target=lambda: victim.update(result=run_python(code)))
    thread.start()
    try:
        [pid] = _wait_for(lambda: [p for p, cwd in _sandbox_cwds() if cwd.endswith(marker)], 5)
        # Same uid as the victim, so file ownership would allow it: only Landlock's scope stops the signal.
        attack = run_python(f"import os\nos.kill({pid}, 9)\nprint('sent')", audit_hook=False)
        assert attack.status == "error" and "sent" not in attack.stdout
    finally:
        thread.join()
    assert victim["result"].status == "ok" and "survived" in victim["result"].stdout


# ---------------------------------------------------------------- processes and resources


_FORK_BOMB = ("import os\nborn = 0\nwhile born < 200:\n    try:\n        if os.fork() == 0:\n            import time\n"
              "            time.sleep(60)\n    except OSError:\n        break\n    born += 1\n"
              "print('born', born, os.getpgid(0))")


@both
def test_fork_bomb_creates_no_process(audit_hook):
    result = run_python(_FORK_BOMB, max_processes=8, wall_s=5, audit_hook=audit_hook)
    words = result.stdout.split()
    assert words[:2] == ["born", "0"], result
    assert not [p for p, state, group in _process_groups() if group == int(words[2]) and state not in "ZX"]


@pytest.mark.skipif(not ROOT, reason="the process limit binds the sandbox uid, which only root can switch to")
def test_fork_bomb_without_seccomp_hits_the_process_limit_and_dies_with_the_run(landlock_alone):
    result = run_python(_FORK_BOMB, max_processes=8, wall_s=5, audit_hook=False)
    _, born, group = result.stdout.split()
    assert int(born) < 8
    assert not [p for p, state, pgid in _process_groups() if pgid == int(group) and state not in "ZX"]


@both
def test_memory_bomb_is_stopped(audit_hook):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))"
    started = time.monotonic()
    result = run_python(code, memory_mb=256, audit_hook=audit_hook)
    assert result.status == "memory" and time.monotonic() - started < 5


@both
def test_infinite_loop_is_stopped_by_the_cpu_limit(audit_hook):
    started = time.monotonic()
    result = run_python("while True:\n    pass", cpu_s=1, wall_s=20, audit_hook=audit_hook)
    assert result.status == "timeout" and result.returncode == -signal.SIGXCPU
    assert time.monotonic() - started < 5


@both
def test_sleeping_forever_is_stopped_by_the_wall_clock(audit_hook):
    started = time.monotonic()
    result = run_python("import time\ntime.sleep(600)", wall_s=1, audit_hook=audit_hook)
    assert result.status == "timeout" and time.monotonic() - started < 3


def test_ctypes_escape_attempts_are_refused_by_the_tripwire():
    result = run_python("import ctypes\nprint(ctypes.CDLL(None).fork())")
    assert result.status == "error" and "import ctypes" in result.tripped


def test_ctypes_calls_straight_to_the_kernel_are_refused():
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print('open', libc.open(b'/etc/passwd', 0))\n"
            "print('fork', libc.fork())\n"
            "print('setuid', libc.setuid(0))\n"
            "print('ptrace', libc.ptrace(16, __import__('os').getppid(), 0, 0))\n"  # PTRACE_ATTACH to the kit
            "print('unshare', libc.unshare(0x10000000))\n"  # a user namespace, to gain capabilities in it
            "print('socket', libc.syscall(41 if __import__('os').uname().machine == 'x86_64' else 198, 2, 1, 0))\n"
            "print('no_new_privs_off', libc.prctl(38, 0, 0, 0, 0))\n"
            "print('landlock_off', libc.syscall(446, -1, 0))")
    result = run_python(code, audit_hook=False)
    assert result.status == "ok", result.stderr
    calls = dict(line.split() for line in result.stdout.splitlines())
    assert set(calls.values()) == {"-1"}, calls


def test_posixsubprocess_escape_attempts_are_refused():
    hooked = run_python("import _posixsubprocess\n_posixsubprocess.fork_exec()")
    assert hooked.status == "error" and "sandbox:" in hooked.stderr
    reimported = ("import sys\ndel sys.modules['_posixsubprocess']\nimport _posixsubprocess, subprocess\n"
                  "print(subprocess.run(['/bin/cat', '/etc/passwd'], capture_output=True).stdout)")
    for audit_hook in (True, False):
        result = run_python(reimported, audit_hook=audit_hook)
        assert result.status == "error" and "root:" not in result.stdout


# ---------------------------------------------------------------- the kit dies: nothing of the sandbox stays


def _sandbox_cwds() -> list[tuple[int, str]]:
    """(pid, cwd) of every process we can see."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            found.append((int(entry), os.readlink(f"/proc/{entry}/cwd")))
        except OSError:
            continue
    return found


def _process_groups() -> list[tuple[int, str, int]]:
    """(pid, state, process group) of every process."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found.append((int(entry), fields[0], int(fields[2])))
    return found


def _wait_for(probe, seconds: float):
    deadline = time.monotonic() + seconds
    while not (found := probe()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def _mount_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def test_no_sandbox_process_or_work_folder_survives_kill_9_of_the_kit():
    marker = "orphan-" + secrets.token_hex(6)
    code = f"import os, time\nos.mkdir({marker!r})\nos.chdir({marker!r})\ntime.sleep(60)"
    helper = subprocess.Popen([sys.executable, "-c", f"from esac_kit.sandbox import run_python\n"
                               f"run_python({code!r}, wall_s=60)"])
    try:
        [(pid, cwd)] = _wait_for(lambda: [(p, c) for p, c in _sandbox_cwds() if c.endswith(marker)], 10)
        namespace = _mount_namespace(pid)
        private = namespace != _mount_namespace(os.getpid())
        helper.kill()
        helper.wait()

        def remaining():
            return [p for p, state, group in _process_groups() if group == pid and state not in "ZX"]

        assert _wait_for(lambda: not remaining(), 10) and not remaining()  # generous: shared, loaded machines
        assert not [p for p, c in _sandbox_cwds() if c.endswith(marker)]
        work = os.path.dirname(cwd)
        if private:  # the work folder's tmpfs lived in the child's mount namespace: nothing may still hold it
            assert not [p for p, _ in _sandbox_cwds() if _mount_namespace(p) == namespace]
            assert not os.path.exists(work)
        else:  # on disk: the next run sweeps the folder of a dead kit
            run_python("pass")
            assert not os.path.exists(work)
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()


# ---------------------------------------------------------------- without the kernel wall: refuse, or say unsafe


@pytest.fixture
def no_landlock(monkeypatch):
    reason = "Landlock is unavailable: the kernel was built without it"
    monkeypatch.setattr(sandbox, "_landlock_abi", lambda: (0, reason))
    monkeypatch.setattr(sandbox, "_UNSAFE_ALLOWED", False)


def test_without_landlock_model_code_is_refused_with_one_line_naming_it(no_landlock):
    for run in (lambda: run_python("print('ran')"), sandbox.require_kernel_sandbox,
                lambda: run_function_tests("def f(x):\n    return x\n", "f", ["(1,)"])):
        with pytest.raises(SandboxUnavailable) as refused:
            run()
        message = str(refused.value)
        assert "Landlock" in message and "\n" not in message
        assert isinstance(refused.value, ConfigError) and refused.value.exit_code == 2
    assert not sandbox.sandbox_layers()["landlock"]


def test_without_landlock_the_opt_out_runs_and_marks_the_result_unsafe(no_landlock):
    sandbox.allow_unsafe_sandbox(True)
    result = run_python("print('ran')")
    assert result.status == "ok" and result.stdout == "ran\n"
    assert result.unsafe and "landlock" not in result.layers


def test_a_safe_run_says_so_and_records_its_tripwire_refusals():
    result = run_python("import os\ntry:\n    os.kill(os.getppid(), 0)\nexcept PermissionError:\n    print('refused')")
    assert result.stdout == "refused\n" and result.tripped == ("os.kill",)
    assert not result.unsafe and {"landlock", "seccomp", "no_new_privs", "audit_hook"} <= set(result.layers)
