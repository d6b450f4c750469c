"""The sandbox for model-written code: a short-lived, limited, unprivileged Python child per run, walled by the kernel.

The walls are the kernel's. The child's bootstrap raises them before any model code runs, and none can be undone:
- Landlock, required: the child may read only the stdlib folders (its sys.path, which -S derives from
  sys.base_prefix), the folders of the interpreter and of its shared libraries (from /proc/self/maps: the
  executable's real path, libpython, libc and their neighbours), zoneinfo, /etc/localtime, /etc/ld.so.cache,
  /dev/urandom and /dev/zero; it may write only /dev/null and its work folder, and execute nothing (the
  interpreter already runs). Every right the running ABI knows is handled, masked by ABI version as the
  kernel docs' sample does, so what no rule grants is denied whatever path, descriptor (dir_fd, O_PATH) or
  symlink leads there: /etc, /proc, /tmp, the caller's files. With ABI >= 4 TCP bind and connect are denied;
  with ABI >= 6 signals and abstract unix sockets cannot reach outside the run (not the kit, not another run).
- seccomp: socket(2) fails (socketpair(2), asyncio's self-pipe, still works), which also closes what Landlock
  ABI 7 leaves open (UDP, netlink, named unix sockets such as a syslog or bus socket); no process can be
  created (fork, vfork, clone without CLONE_THREAD; threads still work); unshare(2) and io_uring are refused.
- no_new_privs (PR_SET_NO_NEW_PRIVS), set first, as Landlock and seccomp require: no setuid program helps.
- PR_SET_PDEATHSIG: the child is SIGKILLed when the kit dies, even by SIGKILL; as it can create no process,
  nothing of the run outlives the kit.
- when we are root: the child drops to uid/gid nobody (in its bootstrap, because the interpreter may live under
  a folder that uid cannot enter: the bootstrap opens the stdlib folders first and imports through those
  descriptors) and runs in new network and mount namespaces (`unshare --net --mount`): the network has no
  route, and the work folder is on a tmpfs mounted over /tmp in the private mount namespace, so the kernel
  frees it with the child however the kit ended. Without root (or unshare) the work folder is on disk, named
  with the kit's pid: removed after the run, or by a later run's sweep when that pid is dead.
- resource limits set before exec (CPU seconds, address space, file size, open files, processes, no core
  dumps), a wall-clock timeout, and the child's process group killed when the run ends, however it ends.
- a fresh interpreter (`-S -s -P -B`) with an environment built from scratch: none of the caller's variables
  (API keys) reach it.

The audit hook is a tripwire, not a wall (CPython's docs say audit hooks are no security boundary): it refuses
the obvious escape hatches (sockets, process creation, signals, ctypes, tracing, gc introspection, code
objects, paths outside the work folder as text), and each refusal is recorded in SandboxResult.tripped for the
caller to report. SandboxResult.layers names the layers active in the run.

Without Landlock the sandbox refuses to run model code: SandboxUnavailable (a ConfigError, exit 2) names the
missing kernel feature in one line. allow_unsafe_sandbox(True), for the CLI's --unsafe-sandbox, runs it anyway
with the other layers, and every such result says unsafe=True. require_kernel_sandbox() checks up front;
sandbox_layers() tells what this machine gives.

A model's code misbehaving is a normal result (status not "ok"); a sandbox that cannot start at all raises
SandboxError, an infrastructure failure that is never scored (amendment 001 §8).
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import re
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

from esac_kit.errors import ConfigError

SANDBOX_UID = SANDBOX_GID = 65534  # nobody/nogroup: owns nothing, so the kernel refuses it our files
OUTPUT_LIMIT = 64 * 1024          # bytes of stdout/stderr kept for the caller
RESULT_LIMIT = 100_000            # characters of one result repr; hidden-test answers are small
_MEMORY_EXIT = 86                 # the bootstrap's exit code after a MemoryError
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_TRIPS_KEPT = 20                  # distinct tripwire refusals kept per run
_UNSAFE_ALLOWED = False           # set by allow_unsafe_sandbox()


class SandboxError(RuntimeError):
    """The sandbox itself failed (the interpreter could not start): an infrastructure failure, never scored."""


class SandboxUnavailable(ConfigError):
    """This machine's kernel lacks the sandbox's wall (Landlock), so model code is not run."""


@dataclass(frozen=True)
class SandboxResult:
    """How one sandboxed run ended (status ok, error, timeout, memory or killed), its tripwire refusals and layers."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    tripped: tuple[str, ...] = ()   # what the audit hook refused, in order, e.g. "os.kill", "import ctypes"
    layers: tuple[str, ...] = ()    # the layers active in this run, named as in sandbox_layers(), plus audit_hook
    unsafe: bool = False            # run without Landlock, by allow_unsafe_sandbox()


@dataclass(frozen=True)
class FunctionTestsOutcome:
    """Each call's result repr (None when it raised or the run died), each call's exception name, and the run."""

    status: str
    results: list[str | None]
    errors: list[str | None]
    run: SandboxResult


# ---------------------------------------------------------------- the child's bootstrap
# Runs as `python -c _BOOTSTRAP`, its job on stdin. It imports nothing outside the stdlib and never imports
# subprocess (whose _posixsubprocess would give the model an unaudited fork); it makes its kernel calls through
# ctypes, then drops ctypes from sys.modules so that the model's import meets the tripwire. The guard keeps only
# immutable state (str, tuple, frozenset, builtin functions) and no Python helpers, so even a frame leaked
# through a refusal's traceback offers nothing to tamper with.
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


def _install_guard(work, readable, trip):
    """A tripwire: refuse the obvious escape hatches in the interpreter and report each refusal as a tagged line."""
    import posix
    getcwd, stat, emit = posix.getcwd, posix.stat, posix.write
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
        try:
            if event == "socket.__new__" and type_(args[1]) is int_ and args[1] == af_unix:
                return  # socketpair() for asyncio's self-pipe; connect, bind and send stay refused
            if event in deny or event.startswith(deny_prefixes):
                raise refuse("sandbox: %s is not allowed" % event)
            if event == "import":
                name = args[0]
                if type_(name) is not str_ or name in blocked_modules or name.partition(".")[0] in blocked_modules \
                        or name.startswith("_test"):
                    # ImportError, so that optional imports degrade
                    raise unavailable("sandbox: importing %r is not allowed" % (name,))
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
        except (refuse, unavailable):
            what = "import " + args[0] if event == "import" and type_(args[0]) is str_ else event
            try:  # the kit records the trip; the model closing stdout only loses the record
                emit(1, trip + str_.encode(what[:120].replace("\n", " "), "utf-8", "replace") + b"\n")
            except OSError:
                pass
            raise

    sys.addaudithook(guard)


def _read_job(posix):
    """The job comes on stdin, since the work folder may not exist yet; stdin then reads as /dev/null."""
    chunks = []
    while True:
        chunk = posix.read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    null = posix.open("/dev/null", posix.O_RDONLY)
    posix.dup2(null, 0)
    posix.close(null)
    return b"".join(chunks)


def _private_tmp(ctypes, libc, job):
    """Mount a fresh tmpfs on /tmp in our private mount namespace: the work folder dies with the namespace."""
    import os
    if os.readlink("/proc/self/ns/mnt") == job["kit_mounts"]:  # never cover the kit's own /tmp
        raise SystemExit("sandbox: no private mount namespace")
    options = ("size=%dm,nr_inodes=4096,mode=0755" % job["tmpfs_mb"]).encode()
    if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", ctypes.c_ulong(2 | 4 | 8), options) != 0:  # nosuid, nodev, noexec
        raise SystemExit("sandbox: cannot mount a private /tmp: errno %d" % ctypes.get_errno())
    os.mkdir(job["work"], 0o700)
    if job["uid"] is not None:
        os.chown(job["work"], job["uid"], job["gid"])


def _syscall(ctypes, libc, what, number, *args):
    """A raw system call; a failure before the model runs aborts the bootstrap (an infrastructure failure)."""
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        raise SystemExit("sandbox: %s failed: errno %d" % (what, ctypes.get_errno()))
    return result


def _landlock_ruleset(ctypes, libc, abi, work, stdlib):
    """The Landlock ruleset, built while we may still open everything: read the stdlib and the interpreter's
    libraries, read and write the work folder, nothing else; enforced later by landlock_restrict_self."""
    import os, stat
    read_file, read_dir, write_file, truncate = 1 << 2, 1 << 3, 1 << 1, 1 << 14
    read, file_rights = read_file | read_dir, 1 << 0 | write_file | read_file | truncate | 1 << 15
    # Every right the running ABI knows is handled, so anything no rule grants is denied.
    fs = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0) | (1 << 15 if abi >= 5 else 0)
    net = 3 if abi >= 4 else 0  # bind and connect TCP: no rule grants a port
    scoped = 3 if abi >= 6 else 0  # abstract unix sockets and signals outside the sandbox
    # The work folder: all but execute, device nodes, fifos, named sockets and device ioctls.
    grants = [(work, fs & ~(1 << 0 | 1 << 6 | 1 << 9 | 1 << 10 | 1 << 11 | 1 << 15)),
              ("/dev/null", read_file | write_file | truncate)]
    for folder in stdlib:  # its listing, for the import system, and all it holds but installed packages
        grants.append((folder, read_dir))
        grants += [(os.path.join(folder, name), read) for name in os.listdir(folder)
                   if name not in ("site-packages", "dist-packages")]
    mapped = set()
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
        for line in handle:  # the interpreter, libpython, libc, libffi: their folders hold what extensions load
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/") and os.path.isfile(fields[5].strip()):
                mapped.add(os.path.dirname(fields[5].strip()))
    for folder in mapped:
        if any(path.startswith(folder + "/") for path in stdlib):  # libpython's folder: its files, not the stdlib
            grants += [(os.path.join(folder, name), read_file) for name in os.listdir(folder)
                       if os.path.isfile(os.path.join(folder, name))]
        else:
            grants.append((folder, read))
    grants += [(path, read) for path in ("/usr/share/zoneinfo", "/etc/localtime", "/etc/ld.so.cache",
                                         "/dev/urandom", "/dev/zero")]

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    attr = Ruleset(fs, net, scoped)
    ruleset = _syscall(ctypes, libc, "landlock_create_ruleset", 444, ctypes.byref(attr),
                       ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    for path, rights in grants:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)  # one at a time: at most 64 descriptors
        except OSError:
            continue
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                rights &= file_rights  # a rule on a file takes only file rights
            rule = PathBeneath(rights & fs, fd)
            _syscall(ctypes, libc, "landlock_add_rule " + path, 445, ctypes.c_long(ruleset), ctypes.c_long(1),
                     ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(fd)
    return ruleset


def _kernel_wall(ctypes, libc, job, ruleset):
    """no_new_privs, then Landlock and seccomp: kernel-enforced, kept across fork and exec, never undone."""
    import os
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, which Landlock and seccomp require
        raise SystemExit("sandbox: prctl(PR_SET_NO_NEW_PRIVS) failed")
    if ruleset is not None:
        _syscall(ctypes, libc, "landlock_restrict_self", 446, ctypes.c_long(ruleset), ctypes.c_uint32(0))
        os.close(ruleset)
    if job["seccomp"]:
        _seccomp(ctypes, libc)


def _seccomp(ctypes, libc):
    """A seccomp filter: no socket(2) (socketpair(2), asyncio's self-pipe, stays), no new process, no unshare(2),
    no io_uring; threads still work."""
    import os
    arch, clone, denied = {
        "x86_64": (0xC000003E, 56, (41, 57, 58, 272, 425)),  # socket, fork, vfork, unshare, io_uring_setup
        "aarch64": (0xC00000B7, 220, (198, 97, 425)),  # socket, unshare, io_uring_setup
    }[os.uname().machine]
    eperm, enosys, allow, kill = 0x00050000 | 1, 0x00050000 | 38, 0x7FFF0000, 0x80000000
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [(load, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill),  # another calling convention (32-bit x86): kill
               (load, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # x32 system calls: refuse
    for number in denied:
        program += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    program += [(jeq, 0, 1, 435), (ret, 0, 0, enosys),  # clone3: "unsupported", so glibc falls back to clone
                (jeq, 0, 3, clone), (load, 0, 0, 16), (jset, 1, 0, 0x10000),  # clone: refused without CLONE_THREAD
                (ret, 0, 0, eperm), (ret, 0, 0, allow)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*instruction) for instruction in program])
    if libc.prctl(22, 2, ctypes.addressof(Program(len(program), filters)), 0, 0) != 0:  # SECCOMP_MODE_FILTER
        raise SystemExit("sandbox: prctl(PR_SET_SECCOMP) failed: errno %d" % ctypes.get_errno())


def _main():
    import json, os, posix, signal
    job = json.loads(_read_job(posix))
    tag, out, dumps, exit_now = job["tag"], sys.stdout, json.dumps, os._exit
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    if job["namespaces"]:
        _private_tmp(ctypes, libc, job)
    os.chdir(job["work"])
    with open("solution.py", "w", encoding="utf-8") as handle:
        handle.write(job["code"])  # only so that tracebacks can quote the model's lines
    os.chmod("solution.py", 0o644)
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
    stdlib = [os.path.realpath(p) for p in sys.path if os.path.isdir(p)]  # from sys.base_prefix: -S drops site
    readable = [job["work"], "/dev/null", "/dev/urandom", "/dev/zero", "/usr/share/zoneinfo", "/etc/localtime"]
    readable += stdlib
    ruleset = _landlock_ruleset(ctypes, libc, job["landlock"], job["work"], stdlib) if job["landlock"] else None
    if job["uid"] is not None:
        readable += _reroot_imports(posix)
        os.setgroups([])
        os.setgid(job["gid"])
        os.setuid(job["uid"])
        if os.getuid() != job["uid"] or os.geteuid() != job["uid"]:
            raise SystemExit("sandbox: could not drop privileges")
    if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, after the uid change that clears it
        raise SystemExit("sandbox: prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != job["parent"]:
        exit_now(1)  # the kit died before the prctl
    _kernel_wall(ctypes, libc, job, ruleset)
    for name in [name for name in sys.modules if name.partition(".")[0] in ("ctypes", "_ctypes")]:
        del sys.modules[name]  # the tripwire refuses a fresh import
    del ctypes, libc
    if job["audit"]:
        _install_guard(job["work"], tuple(readable), (tag + " t ").encode())
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


# ---------------------------------------------------------------- the kernel's layers (probed once per process)


@functools.lru_cache(maxsize=None)
def _works(*command: str) -> bool:
    try:
        return subprocess.run(command, env={"PATH": _SAFE_PATH}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=None)
def _landlock_abi() -> tuple[int, str]:
    """The running kernel's Landlock ABI version (0 without Landlock) and, when 0, why."""
    if sys.platform != "linux":
        return 0, f"Landlock is Linux-only and this is {sys.platform}"
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION); 444 on every architecture
    abi = libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi > 0:
        return abi, ""
    error = ctypes.get_errno()
    reason = {errno.ENOSYS: "the kernel was built without it", errno.EOPNOTSUPP: "it is not enabled at boot "
              "(add landlock to the lsm= kernel parameter)"}.get(error, os.strerror(error))
    return 0, f"Landlock is unavailable: {reason}"


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel, 0 when it has none."""
    return _landlock_abi()[0]


def allow_unsafe_sandbox(allow: bool = True) -> None:
    """Let the sandbox run model code without Landlock (the CLI's --unsafe-sandbox); results then say unsafe."""
    global _UNSAFE_ALLOWED
    _UNSAFE_ALLOWED = allow


def require_kernel_sandbox() -> int:
    """The Landlock ABI the sandbox will use; raises SandboxUnavailable without one unless unsafe runs are allowed."""
    abi, reason = _landlock_abi()
    if abi or _UNSAFE_ALLOWED:
        return abi
    raise SandboxUnavailable(f"the sandbox will not run model code: {reason} (Landlock is its kernel filesystem "
                             "wall); --unsafe-sandbox runs it without")


def sandbox_layers() -> dict[str, bool]:
    """Which layers this machine gives the sandbox, so a degraded setup is visible, not silent."""
    root = os.geteuid() == 0
    abi = landlock_abi()
    unshare, true = shutil.which("unshare"), shutil.which("true") or "/bin/true"
    namespaces = bool(root and unshare and _works(unshare, "--net", "--mount", "--", true))
    return {
        "landlock": abi >= 1,
        "landlock_network": abi >= 4,
        "landlock_scopes": abi >= 6,
        "seccomp": sys.platform == "linux" and os.uname().machine in ("x86_64", "aarch64"),
        "no_new_privs": sys.platform == "linux",
        "drop_privileges": root,
        "network_namespace": namespaces,
        "mount_namespace": namespaces,
    }


def _command(layers: dict[str, bool]) -> list[str]:
    flags = ["--net"] * layers["network_namespace"] + ["--mount"] * layers["mount_namespace"]
    # unshare execs in place: the child keeps us as its parent, so PR_SET_PDEATHSIG follows our death
    prefix = [shutil.which("unshare"), *flags, "--"] if flags else []
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


def _sweep_stale_folders() -> None:
    """Remove the on-disk work folders of kits that died (killed before their cleanup): the name holds the pid."""
    base = tempfile.gettempdir()
    for entry in os.listdir(base):
        match = re.fullmatch(r"esac-sandbox-(\d+)-\w+", entry)
        if not match:
            continue
        try:
            os.kill(int(match[1]), 0)
        except ProcessLookupError:
            _remove(os.path.join(base, entry))
        except (PermissionError, OverflowError):
            pass  # alive, under another uid


def _feed(stream, data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except OSError:
        pass  # the child died before reading its job: the run reports that


def _execute(code: str, entry: str | None, args_list: list[str], *, cpu_s: float = 5, wall_s: float = 10,
             memory_mb: int = 512, max_processes: int = 16, max_file_mb: int = 8,
             audit_hook: bool = True) -> tuple[SandboxResult, list[bytes]]:
    abi = require_kernel_sandbox()
    layers = sandbox_layers()
    tag = secrets.token_hex(16)
    private = layers["mount_namespace"]
    if private:  # made by the child on its own tmpfs, which the kernel frees with its mount namespace
        work, folder = f"/tmp/esac-sandbox-{secrets.token_hex(6)}", None
    else:  # on disk: removed below, or by the next kit's sweep if this one is killed first
        _sweep_stale_folders()
        work = folder = os.path.realpath(tempfile.mkdtemp(prefix=f"esac-sandbox-{os.getpid()}-"))
        if layers["drop_privileges"]:
            os.chown(folder, SANDBOX_UID, SANDBOX_GID)
    job = {"tag": tag, "work": work, "code": code, "entry": entry, "args": list(args_list),
           "uid": SANDBOX_UID if layers["drop_privileges"] else None, "gid": SANDBOX_GID, "parent": os.getpid(),
           "audit": audit_hook, "landlock": abi, "seccomp": layers["seccomp"], "namespaces": private,
           "kit_mounts": os.readlink("/proc/self/ns/mnt") if private else None,
           "tmpfs_mb": max(16, 8 * max_file_mb), "memory_exit": _MEMORY_EXIT,
           "result_limit": RESULT_LIMIT}
    env = {"PATH": _SAFE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": work, "TMPDIR": work,
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
    try:
        started = time.monotonic()
        try:
            child = subprocess.Popen(_command(layers), cwd="/", env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                     preexec_fn=_limiter(cpu_s, memory_mb, max_processes, max_file_mb))
        except (OSError, subprocess.SubprocessError) as error:
            raise SandboxError(f"cannot start the sandbox interpreter: {error}") from error
        try:
            readers = [_Reader(child.stdout, tag.encode()), _Reader(child.stderr, None)]
            for reader in readers:
                reader.start()
            # A thread, so that a child that never reads cannot hold us past the wall clock.
            threading.Thread(target=_feed, args=(child.stdin, json.dumps(job).encode()), daemon=True).start()
            timed_out = not _wait_exited(child.pid, started + wall_s)
        finally:  # normal end, timeout or exception: nothing the child started may outlive the run
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
        if folder:
            _remove(folder)
    out, err = readers
    if b"ready" not in out.tagged[:1]:
        raise SandboxError(f"the sandbox interpreter did not start (exit {returncode}): {err.text()[-2000:]}")
    tripped = list(dict.fromkeys(line[2:].decode("utf-8", "replace") for line in out.tagged if line[:2] == b"t "))
    active = tuple(name for name, on in layers.items() if on) + (("audit_hook",) if audit_hook else ())
    result = SandboxResult(_status(returncode, timed_out), returncode, out.text(), err.text(), round(elapsed, 3),
                           tuple(tripped[:_TRIPS_KEPT]), active, unsafe=not abi)
    return result, [line for line in out.tagged[1:] if line[:2] != b"t "]


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
