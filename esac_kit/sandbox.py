"""The sandbox for model-written code: a short-lived, limited, unprivileged Python child per run.

Defences, layered so that no single one has to hold alone:
- a fresh interpreter (`-S -s -P -B`: no site-packages, no user site, no script folder on sys.path) with an
  environment built from scratch, so none of the caller's variables (API keys) reach it;
- resource limits set before exec: CPU seconds, address space, file size, open files, processes, no core dumps;
- a wall-clock timeout that kills the child's whole process group;
- an empty throwaway working folder, removed afterwards;
- when we are root: a fresh network namespace (`unshare --net`, falling back when unavailable), and the
  child drops to an unprivileged uid/gid before any model code runs (the drop happens in the child's
  bootstrap rather than in preexec because the interpreter may live under a folder that uid cannot enter;
  the bootstrap opens the stdlib folders first and imports through those descriptors);
- `setpriv --no-new-privs` when available, so no setuid program can give privileges back;
- an audit hook installed before the model code, refusing sockets, process creation, signals to other
  processes, writes outside the working folder, reads outside the stdlib and that folder, and the
  interpreter escape hatches (ctypes, tracing, gc introspection, code objects). Audit hooks are not a
  security boundary on their own (CPython says so); here they back up the kernel-enforced layers.

A model's code misbehaving is a normal result (status not "ok"); a sandbox that cannot start at all raises
SandboxError, an infrastructure failure that is never scored (amendment 001 §8).
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

SANDBOX_UID = SANDBOX_GID = 65534  # nobody/nogroup: owns nothing, so the kernel refuses it our files
OUTPUT_LIMIT = 64 * 1024          # bytes of stdout/stderr kept for the caller
RESULT_LIMIT = 100_000            # characters of one result repr; hidden-test answers are small
_MEMORY_EXIT = 86                 # the bootstrap's exit code after a MemoryError
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


class SandboxError(RuntimeError):
    """The sandbox itself failed (the interpreter could not start): an infrastructure failure, never scored."""


@dataclass(frozen=True)
class SandboxResult:
    """How one sandboxed run ended: status is ok, error, timeout, memory or killed."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float


@dataclass(frozen=True)
class FunctionTestsOutcome:
    """Each call's result repr (None when it raised or the run died), each call's exception name, and the run."""

    status: str
    results: list[str | None]
    errors: list[str | None]
    run: SandboxResult


# ---------------------------------------------------------------- the child's bootstrap
# Runs as `python -c _BOOTSTRAP` in the working folder. It imports nothing outside the stdlib and never imports
# subprocess (whose _posixsubprocess would give the model an unaudited fork). The guard keeps only immutable
# state (str, tuple, frozenset, builtin functions) and no Python helpers, so even a frame leaked through a
# refusal's traceback offers nothing to tamper with.
_BOOTSTRAP = r'''
import sys


def _reroot_imports(posix):
    """Import through descriptors opened while privileged: the stdlib's ancestors may be closed to the sandbox uid."""
    aliases = []
    for entry in sys.path:
        try:
            fd = posix.open(entry, posix.O_RDONLY | posix.O_DIRECTORY | posix.O_CLOEXEC)
        except OSError:
            continue
        aliases.append((entry.rstrip("/"), "/proc/self/fd/%d" % fd))
    longest_first = sorted(aliases, key=lambda pair: -len(pair[0]))

    def alias(path):
        for root, new in longest_first:
            if path == root or path.startswith(root + "/"):
                return new + path[len(root):]
        return path

    sys.path[:] = [new for _, new in aliases]
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if type(search) is list:
            search[:] = [alias(p) for p in search]
    sys.path_importer_cache.clear()
    return tuple(new for _, new in aliases)


def _install_guard(work, readable):
    """Refuse, inside the interpreter, what the kernel layers might let through."""
    import posix
    getcwd, stat = posix.getcwd, posix.stat
    # Builtins are captured too: the model may rebind builtins.type & co., not these closure cells.
    type_, str_, bytes_, int_, refuse, unavailable = type, str, bytes, int, PermissionError, ImportError
    deny = frozenset((
        "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.startfile",
        "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg", "signal.pthread_kill", "os.link", "os.symlink",
        "os.fwalk", "resource.setrlimit", "resource.prlimit", "sys.settrace", "sys.setprofile",
        "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "cpython.PyInterpreterState_New"))
    deny_prefixes = ("socket.", "ctypes.", "sqlite3.", "syslog.", "urllib.", "http.client.", "ftplib.", "smtplib.",
                     "poplib.", "imaplib.", "nntplib.", "telnetlib.", "webbrowser.")
    blocked_modules = frozenset((
        "ctypes", "_ctypes", "_posixsubprocess", "_posixshmem", "_multiprocessing", "_xxsubinterpreters",
        "_xxinterpchannels", "_sqlite3", "sqlite3", "_ssl", "ssl", "_dbm", "_gdbm", "readline", "_curses",
        "_curses_panel", "syslog", "ossaudiodev", "_tkinter", "posix", "_signal", "signal"))
    reads = frozenset(("os.listdir", "os.scandir", "os.walk"))
    writes = frozenset(("os.mkdir", "os.remove", "os.rmdir", "os.chmod", "os.chown", "os.utime", "os.truncate",
                        "os.setxattr", "os.removexattr", "os.chflags", "shutil.rmtree", "shutil.chown",
                        "shutil.make_archive", "tempfile.mkstemp", "tempfile.mkdtemp"))
    moves = frozenset(("os.rename", "shutil.move"))
    copies = frozenset(("shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree"))
    write_flags = posix.O_WRONLY | posix.O_RDWR | posix.O_APPEND | posix.O_CREAT | posix.O_TRUNC
    inside, readable_prefixes = work + "/", tuple(root + "/" for root in readable)
    af_unix = 1  # socket.AF_UNIX on Linux, without importing socket here

    def guard(event, args):
        if event == "socket.__new__" and type_(args[1]) is int_ and args[1] == af_unix:
            return  # socketpair() for asyncio's self-pipe; connect, bind and send stay refused
        if event in deny or event.startswith(deny_prefixes):
            raise refuse("sandbox: %s is not allowed" % event)
        if event == "import":
            name = args[0]
            if type_(name) is not str_ or name in blocked_modules or name.partition(".")[0] in blocked_modules \
                    or name.startswith("_test"):
                raise unavailable("sandbox: importing %r is not allowed" % (name,))  # ImportError: optional imports degrade
            return
        if event == "object.__setattr__":
            if type_(args[1]) is not str_ or args[1] == "__code__":
                raise refuse("sandbox: replacing code objects is not allowed")
            return
        if event == "open":
            checks = ((args[0], type_(args[2]) is not int_ or args[2] & write_flags != 0),)
        elif event in reads:
            checks = ((args[0] if args[0] is not None else ".", False),)
        elif event in writes or event == "os.chdir":
            checks = ((args[0], True),)
        elif event in moves:
            checks = ((args[0], True), (args[1], True))
        elif event in copies:
            checks = ((args[0], False), (args[1], True))
        elif event == "shutil.unpack_archive":
            checks = ((args[0], False), (args[1], True))
        else:
            return
        for path, write in checks:
            if type_(path) is int_:
                # An open descriptor: opening it was checked; only open/truncate/listdir may use one.
                if event in ("open", "os.truncate") or not write:
                    continue
                raise refuse("sandbox: %s on a descriptor is not allowed" % event)
            if type_(path) is bytes_:
                path = path.decode("utf-8", "surrogateescape")
            elif type_(path) is not str_:
                raise refuse("sandbox: paths must be str or bytes")
            if not path.startswith("/"):
                path = getcwd() + "/" + path
            parts = []
            for part in path.split("/"):
                if part == "..":
                    if parts:
                        parts.pop()
                elif part and part != ".":
                    parts.append(part)
            path = "/" + "/".join(parts)
            if path == work or path.startswith(inside):
                continue
            if write:
                raise refuse("sandbox: writing outside the working folder is not allowed: " + path)
            if not (path in readable or path.startswith(readable_prefixes)):
                raise refuse("sandbox: reading outside the stdlib and working folder is not allowed: " + path)
            if event == "open":
                try:
                    mode = stat(path).st_mode
                except OSError:
                    continue
                if mode & 0o170000 == 0o040000:  # a directory descriptor would let *at calls escape the checks
                    raise refuse("sandbox: opening a directory outside the working folder is not allowed")

    sys.addaudithook(guard)


def _main():
    import json, os, posix, signal
    with open("boot.json", encoding="utf-8") as handle:
        job = json.load(handle)
    os.unlink("boot.json")
    tag, out, dumps, exit_now = job["tag"], sys.stdout, json.dumps, os._exit
    calls = None
    if job["entry"] is not None:
        import ast
        calls = [ast.literal_eval(args) for args in job["args"]]
    # Unaudited ways to create files or signal processes go before the model can reach them.
    for module, name in ((os, "mkfifo"), (posix, "mkfifo"), (os, "mknod"), (posix, "mknod"),
                         (os, "pidfd_open"), (posix, "pidfd_open"), (signal, "pidfd_send_signal")):
        if hasattr(module, name):
            delattr(module, name)
    sys.modules["_signal"].__dict__.pop("pidfd_send_signal", None)
    import _posixsubprocess  # imported now, with its unaudited fork_exec disarmed, so `import subprocess` works

    def fork_exec(*args, **kwargs):
        raise PermissionError("sandbox: creating processes is not allowed")

    _posixsubprocess.fork_exec = fork_exec
    readable = [job["work"], "/dev/null", "/dev/urandom", "/dev/zero", "/usr/share/zoneinfo", "/etc/localtime"]
    readable += [os.path.realpath(p) for p in sys.path if os.path.isdir(p)]
    if job["uid"] is not None:
        readable += _reroot_imports(posix)
        os.setgroups([])
        os.setgid(job["gid"])
        os.setuid(job["uid"])
        if os.getuid() != job["uid"] or os.geteuid() != job["uid"]:
            raise SystemExit("sandbox: could not drop privileges")
    if job["audit"]:
        _install_guard(job["work"], tuple(readable))
    out.write(tag + " ready\n")
    out.flush()

    namespace = {"__name__": "__main__" if calls is None else "solution", "__builtins__": __builtins__}
    try:
        exec(compile(job["code"], "solution.py", "exec"), namespace)
    except MemoryError:
        sys.stderr.write("MemoryError\n")
        sys.stderr.flush()
        exit_now(job["memory_exit"])
    if calls is None:
        return
    function = namespace.get(job["entry"])
    if not callable(function):
        sys.stderr.write("entry point %r is not defined\n" % job["entry"])
        sys.exit(1)
    memory = False
    for index, args in enumerate(calls):
        try:
            value = repr(function(*args))
            kind = "r" if len(value) <= job["result_limit"] else "x"
            value = value if kind == "r" else "ResultTooLarge"
        except MemoryError:
            memory, kind, value = True, "x", "MemoryError"
        except BaseException as error:  # SystemExit included: this call failed, the next one still runs
            kind, value = "x", type(error).__name__
        out.write("%s %s %d %s\n" % (tag, kind, index, dumps(value)))
        out.flush()
    if memory:
        exit_now(job["memory_exit"])


_main()
'''


# ---------------------------------------------------------------- layer probes (cached per process)


@functools.lru_cache(maxsize=None)
def _works(*command: str) -> bool:
    try:
        return subprocess.run(command, env={"PATH": _SAFE_PATH}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sandbox_layers() -> dict[str, bool]:
    """Which optional layers this machine gives the sandbox, so a degraded setup is visible, not silent."""
    root = os.geteuid() == 0
    unshare, setpriv, true = shutil.which("unshare"), shutil.which("setpriv"), shutil.which("true") or "/bin/true"
    return {
        "drop_privileges": root,
        "network_namespace": bool(root and unshare and _works(unshare, "--net", "--", true)),
        "no_new_privs": bool(setpriv and _works(setpriv, "--no-new-privs", "--", true)),
    }


def _command(layers: dict[str, bool]) -> list[str]:
    prefix = []
    if layers["network_namespace"]:
        prefix += [shutil.which("unshare"), "--net", "--"]  # unshare execs in place: the child keeps our pid
    if layers["no_new_privs"]:
        prefix += [shutil.which("setpriv"), "--no-new-privs", "--"]
    # Not -I: it would ignore PYTHONHASHSEED. We build the whole environment, so -E would buy nothing.
    return prefix + [sys.executable, "-S", "-s", "-P", "-B", "-X", "utf8", "-c", _BOOTSTRAP]


def _limiter(cpu_s: float, memory_mb: int, max_processes: int, max_file_mb: int):
    cpu = max(1, math.ceil(cpu_s))
    limits = [(resource.RLIMIT_CPU, (cpu, cpu + 1)),  # SIGXCPU at the soft limit, SIGKILL a second later
              (resource.RLIMIT_AS, (memory_mb << 20,) * 2),
              (resource.RLIMIT_FSIZE, (max_file_mb << 20,) * 2),
              (resource.RLIMIT_NOFILE, (64, 64)),
              (resource.RLIMIT_NPROC, (max_processes,) * 2),
              (resource.RLIMIT_CORE, (0, 0))]

    def apply() -> None:
        for which, (soft, hard) in limits:
            ceiling = resource.getrlimit(which)[1]  # an unprivileged caller cannot raise a hard limit
            if ceiling != resource.RLIM_INFINITY:
                soft, hard = min(soft, ceiling), min(hard, ceiling)
            resource.setrlimit(which, (soft, hard))

    return apply


# ---------------------------------------------------------------- bounded capture of the child's output


class _Reader(threading.Thread):
    """Drain a pipe, keeping a bounded head of ordinary output and every line carrying the run's tag."""

    def __init__(self, stream, tag: bytes | None):
        super().__init__(daemon=True)
        self._fd, self._tag = stream.fileno(), tag
        self.kept, self.dropped, self.tagged = bytearray(), 0, []

    def _keep(self, data: bytes) -> None:
        room = OUTPUT_LIMIT - len(self.kept)
        self.kept += data[:room]
        self.dropped += max(0, len(data) - room)

    def _line(self, line: bytes) -> None:
        at = line.find(self._tag) if self._tag else -1
        if at < 0:
            self._keep(line)
            return
        self._keep(line[:at])
        if len(self.tagged) < 100_000:
            self.tagged.append(line[at + len(self._tag) + 1:].rstrip(b"\n"))

    def run(self) -> None:
        pending = b""
        while chunk := os.read(self._fd, 65536):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                self._line(line + b"\n")
            if len(pending) > 4 * RESULT_LIMIT + 4096:  # an endless line without a newline: ordinary output
                self._keep(pending)
                pending = b""
        if pending:
            self._line(pending)

    def text(self) -> str:
        text = self.kept.decode("utf-8", "replace")
        return text + (f"\n[... {self.dropped} more bytes]" if self.dropped else "")


# ---------------------------------------------------------------- running


def _group_alive(group: int) -> bool:
    """True while a process of the group is still running (a SIGKILLed process takes a moment to die)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            return True
    return False


def _await_group_exit(group: int, deadline: float) -> None:
    """Wait until the killed group is gone, so that the caller never goes on beside the model's processes."""
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.005)


def _wait_exited(pid: int, deadline: float) -> bool:
    """Wait until the child exits, leaving it a zombie so its pid (our group id) cannot be reused before killpg."""
    delay = 0.001
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.02)
    return True


def _status(returncode: int, timed_out: bool) -> str:
    if timed_out or returncode == -signal.SIGXCPU:
        return "timeout"
    if returncode == _MEMORY_EXIT:
        return "memory"
    if returncode < 0:
        return "killed"
    return "ok" if returncode == 0 else "error"


def _remove(folder: str) -> None:
    for root, dirs, _ in os.walk(folder):  # a child may have left folders it made unreadable
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), 0o700)
            except OSError:
                pass
    shutil.rmtree(folder, ignore_errors=True)


def _execute(code: str, entry: str | None, args_list: list[str], *, cpu_s: float = 5, wall_s: float = 10,
             memory_mb: int = 512, max_processes: int = 16, max_file_mb: int = 8,
             audit_hook: bool = True) -> tuple[SandboxResult, list[bytes]]:
    layers = sandbox_layers()
    tag = secrets.token_hex(16)
    work = os.path.realpath(tempfile.mkdtemp(prefix="esac-sandbox-"))
    try:
        job = {"tag": tag, "work": work, "code": code, "entry": entry, "args": list(args_list),
               "uid": SANDBOX_UID if layers["drop_privileges"] else None, "gid": SANDBOX_GID,
               "audit": audit_hook, "memory_exit": _MEMORY_EXIT, "result_limit": RESULT_LIMIT}
        with open(os.path.join(work, "boot.json"), "w", encoding="utf-8") as handle:
            json.dump(job, handle)
        with open(os.path.join(work, "solution.py"), "w", encoding="utf-8") as handle:
            handle.write(code)  # only so that tracebacks can quote the model's lines
        os.chmod(os.path.join(work, "solution.py"), 0o644)
        if layers["drop_privileges"]:
            os.chown(work, SANDBOX_UID, SANDBOX_GID)
        env = {"PATH": _SAFE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": work, "TMPDIR": work,
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
        started = time.monotonic()
        try:
            child = subprocess.Popen(_command(layers), cwd=work, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                     preexec_fn=_limiter(cpu_s, memory_mb, max_processes, max_file_mb))
        except (OSError, subprocess.SubprocessError) as error:
            raise SandboxError(f"cannot start the sandbox interpreter: {error}") from error
        readers = [_Reader(child.stdout, tag.encode()), _Reader(child.stderr, None)]
        for reader in readers:
            reader.start()
        try:
            timed_out = not _wait_exited(child.pid, started + wall_s)
        finally:  # even when we are interrupted: nothing the child started may outlive the run
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            returncode = child.wait()
            _await_group_exit(child.pid, time.monotonic() + 2.0)
        elapsed = time.monotonic() - started
        for reader in readers:
            reader.join(timeout=5)
        child.stdout.close()
        child.stderr.close()
    finally:
        _remove(work)
    out, err = readers
    if b"ready" not in out.tagged[:1]:
        raise SandboxError(f"the sandbox interpreter did not start (exit {returncode}): {err.text()[-2000:]}")
    result = SandboxResult(_status(returncode, timed_out), returncode, out.text(), err.text(), round(elapsed, 3))
    return result, out.tagged[1:]


def run_python(code: str, *, cpu_s: float = 5, wall_s: float = 10, memory_mb: int = 512, max_processes: int = 16,
               max_file_mb: int = 8, audit_hook: bool = True) -> SandboxResult:
    """Run a Python program in the sandbox; `audit_hook=False` exists only so tests can prove the other layers."""
    result, _ = _execute(code, None, [], cpu_s=cpu_s, wall_s=wall_s, memory_mb=memory_mb,
                         max_processes=max_processes, max_file_mb=max_file_mb, audit_hook=audit_hook)
    return result


def run_function_tests(code: str, entry_point: str, args_list: list[str], **limits) -> FunctionTestsOutcome:
    """Run the code, then entry_point(*literal_eval(args)) for each args; results are compared by the caller."""
    run, lines = _execute(code, entry_point, args_list, **limits)
    results: list[str | None] = [None] * len(args_list)
    errors: list[str | None] = [None] * len(args_list)
    seen: set[int] = set()
    for line in lines:
        try:
            kind, index, payload = line.decode("utf-8").split(" ", 2)
            index, value = int(index), json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            continue
        if not (0 <= index < len(args_list)) or index in seen or not isinstance(value, str):
            continue
        seen.add(index)
        if kind == "r":
            results[index] = value
        else:
            errors[index] = value[:200]
    for index in range(len(args_list)):
        if index not in seen:
            errors[index] = f"no result (run {run.status})"
    return FunctionTestsOutcome(run.status, results, errors, run)
