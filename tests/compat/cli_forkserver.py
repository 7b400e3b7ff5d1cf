"""A fork server for Debian's OpenStack CLIs: the real entry point, without its start-up cost.

Starting `/usr/bin/baremetal` or `/usr/bin/openstack` costs 1-2 s of CPU, nearly all of it
importing openstackclient, ironicclient, keystoneauth, cliff and their dependencies; the call
itself (argument parsing, the API requests, the output) takes a small fraction of that. The
compatibility suites make thousands of calls, so they pay for the imports once instead:

  * one fork server per entry point and test process (`ForkServer`) starts /usr/bin/python3 on
    this file with the environment the CLI would get and imports the entry point's modules;
  * each call connects to its Unix socket and sends its argv, environment, working directory and
    its standard input, output and error as file descriptors (SCM_RIGHTS);
  * the server forks; the child takes over those descriptors (fresh sys.stdin/stdout/stderr),
    the environment, the working directory and sys.argv, runs the entry point script itself
    (runpy.run_path("/usr/bin/baremetal", run_name="__main__"): the same `main()` and the same
    `sys.exit(main())`), runs the atexit handlers, flushes and exits with the status Python
    would exit with; the server reports the child's pid, then its wait status, to the caller.

So argument parsing, API calls, error handling, output formatting and the exit status are
exactly those of the installed CLI; what the fork skips is the interpreter start and the
imports (done once, before any call, in a process that never runs a command itself). Every call
gets a fresh process (a forked copy), so no state survives from one call to the next except
what the real CLI keeps on disk (e.g. ironicclient's cached API version under $HOME).

Modules the entry point imports lazily (command plugins, output formatters...) are learnt as it
runs: each child reports the modules it had to import, and the server imports them between calls,
so later calls find them loaded. The server imports nothing from another entry point: one
server per entry point.

Where a forked call could still differ from a new process, and what is done about it:
  * state that modules compute when imported: the server runs with the calls' environment and
    working directory (openstack.config's search path reads both) and argv[0] = the entry point
    (cliff's App.NAME); the modules the entry point script imports `main` from are imported
    afresh in every child (ironicclient.shell binds `main(argv=sys.argv[1:])` at import);
  * per-process caches of the installed packages' metadata (stevedore's entry points, cliff's
    modules-to-distributions map) are filled once in the server (`_warm_caches`): they hold the
    same in every child;
  * test_baremetal_cli.py's EntryPointTests compare calls on the server with /usr/bin/baremetal
    processes (status, stdout, stderr).

Callers:
  * `ForkServer(entry, env, cwd).run(args, input=...)` -> (returncode, stdout, stderr), for test
    harnesses that used subprocess.run([entry] + args, ...);
  * `write_shim(path, socket_path, entry)`: an executable stand-in for the entry point (for
    suites that exec the CLI from a directory of their own, e.g. ironicclient's functional
    suite); it forwards its own argv, environment, working directory and standard descriptors
    and exits with the child's status (a signal-killed child: 128 + signal number, as a shell).

Set KILN_CLI_FORKSERVER=0 to make ForkServer.run start the real executable instead (the old,
slow way), e.g. to rule the fork server out when a test fails.

Linux only; Python 3.9+ (socket.send_fds / recv_fds).
"""

import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

# How a call's header is framed: 4-byte big-endian length, then that much JSON.
_LEN = struct.Struct(">I")
# Messages from the server to the caller, one line each.
_PID, _EXIT, _ERROR = "pid", "exit", "error"

START_TIMEOUT = 60.0   # seconds for the server to accept its first call (imports on a busy host)


def enabled():
    """False when KILN_CLI_FORKSERVER=0 asks for real processes."""
    return os.environ.get("KILN_CLI_FORKSERVER", "1") != "0"


# ------------------------------------------------------------------------------------------------
# Caller side
# ------------------------------------------------------------------------------------------------

def _recv_line(conn, buf, deadline):
    """One '\n'-terminated line from conn (None at EOF); buf carries what follows it."""
    while b"\n" not in buf[0]:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise TimeoutError("no answer from the CLI fork server")
        conn.settimeout(remaining)
        try:
            chunk = conn.recv(4096)
        except socket.timeout:
            raise TimeoutError("no answer from the CLI fork server") from None
        if not chunk:
            return None
        buf[0] += chunk
    line, buf[0] = buf[0].split(b"\n", 1)
    return line.decode("utf-8")


def call(socket_path, argv0, args, env, cwd, fds, timeout=None):
    """Runs one CLI call on the fork server; returns its status like Popen.returncode
    (negative: killed by that signal). fds: the child's stdin, stdout and stderr. On timeout the
    child is killed and TimeoutError raised."""
    header = json.dumps({"argv0": argv0, "args": list(args), "env": dict(env),
                         "cwd": cwd}).encode("utf-8")
    deadline = None if timeout is None else time.monotonic() + timeout
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = None
    try:
        conn.settimeout(START_TIMEOUT if timeout is None else max(timeout, START_TIMEOUT))
        conn.connect(socket_path)
        socket.send_fds(conn, [_LEN.pack(len(header)) + header], list(fds))
        buf = [b""]
        while True:
            try:
                line = _recv_line(conn, buf, deadline)
            except TimeoutError:
                if pid is not None:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                raise
            if line is None:
                raise RuntimeError("the CLI fork server closed the connection without a status")
            kind, _, value = line.partition(" ")
            if kind == _PID:
                pid = int(value)
            elif kind == _EXIT:
                status = int(value)
                if os.WIFSIGNALED(status):
                    return -os.WTERMSIG(status)
                return os.WEXITSTATUS(status)
            elif kind == _ERROR:
                raise RuntimeError("CLI fork server: " + value)
    finally:
        conn.close()


class ForkServer:
    """The fork server of one entry point (e.g. /usr/bin/baremetal) for one test process.

    env and cwd are those the real CLI would run with: the server itself starts with them (the
    interpreter's start-up reads the locale, HOME etc.), and they are each call's defaults.
    """

    def __init__(self, entry, env, cwd, log_path=None):
        self.entry = entry
        self.env = dict(env)
        self.cwd = cwd
        self.log_path = log_path
        self.proc = None
        self.tmpdir = None
        self.socket_path = None
        self._listener = None
        self._log = None
        self.calls = 0

    def start(self):
        if not enabled():
            return self
        # A Unix socket's path has at most 107 bytes: /tmp when $TMPDIR is deep.
        parent = tempfile.gettempdir()
        if len(parent) > 60:
            parent = "/tmp"
        self.tmpdir = tempfile.mkdtemp(prefix="kiln-cli-", dir=parent)
        self.socket_path = os.path.join(self.tmpdir, "cli.sock")
        # Listening before the server starts: calls queue up while it imports.
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.socket_path)
        self._listener.listen(64)
        log_path = self.log_path or os.path.join(self.tmpdir, "forkserver.log")
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.abspath(__file__), "serve", self.entry,
             str(self._listener.fileno())],
            pass_fds=[self._listener.fileno()], env=self.env, cwd=self.cwd,
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT)
        # The server has its own copy; ours would keep the socket alive after it dies.
        self._listener.close()
        self._listener = None
        return self

    def stop(self):
        if self.proc is not None:
            # EOF on its standard input: the server exits (a call still running finishes).
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read().decode("utf-8", "replace").splitlines()
        except (OSError, TypeError):
            return ""
        return "\n".join(data[-lines:])

    def run(self, args, input="", env=None, cwd=None, timeout=None, argv0=None):
        """Runs `entry args...`; returns (returncode, stdout, stderr) as text."""
        env = self.env if env is None else env
        cwd = self.cwd if cwd is None else cwd
        argv0 = argv0 or self.entry
        self.calls += 1
        if self.proc is None:  # KILN_CLI_FORKSERVER=0: the real executable
            proc = subprocess.run([self.entry] + list(args), input=input, capture_output=True,
                                  text=True, env=env, cwd=cwd, timeout=timeout)
            return proc.returncode, proc.stdout, proc.stderr
        if self.proc.poll() is not None:
            raise RuntimeError("the CLI fork server exited with status %s\n%s"
                               % (self.proc.returncode, self.log_tail()))
        with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, \
                tempfile.TemporaryFile() as ferr:
            fin.write((input or "").encode("utf-8"))
            fin.flush()
            fin.seek(0)
            try:
                status = call(self.socket_path, argv0, args, env, cwd,
                              [fin.fileno(), fout.fileno(), ferr.fileno()], timeout=timeout)
            except TimeoutError:
                raise subprocess.TimeoutExpired([argv0] + list(args), timeout) from None
            fout.seek(0)
            ferr.seek(0)
            # As subprocess.run(text=True): the locale's encoding (UTF-8 here), newlines
            # translated.
            stdout = fout.read().decode("utf-8", "replace").replace("\r\n", "\n")
            stderr = ferr.read().decode("utf-8", "replace").replace("\r\n", "\n")
        return status, stdout, stderr


_SHIM = """#!/usr/bin/python3 -IS
# Stand-in for %(entry)s: runs it on the CLI fork server at %(socket)s (see %(module)s).
import os, sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, %(dir)r)
import cli_forkserver
sys.exit(cli_forkserver.shim_main(%(socket)r))
"""


def write_shim(path, socket_path, entry):
    """Writes an executable at path that runs entry on the fork server at socket_path."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(path, "w") as f:
        f.write(_SHIM % {"entry": entry, "socket": socket_path, "dir": here,
                         "module": os.path.basename(__file__)})
    os.chmod(path, 0o755)


def shim_main(socket_path):
    """main() of a shim: this process's argv, environment, directory and descriptors."""
    try:
        status = call(socket_path, sys.argv[0], sys.argv[1:], os.environ, os.getcwd(), [0, 1, 2])
    except Exception as e:  # noqa: BLE001 - reported like a crashed CLI
        sys.stderr.write("cli_forkserver shim: %s\n" % e)
        return 1
    return 128 - status if status < 0 else status


# ------------------------------------------------------------------------------------------------
# Server side
# ------------------------------------------------------------------------------------------------

def _preload(entry):
    """Imports what the entry point script imports (its `from X import main` lines), then
    forgets those modules themselves (not what they imported): each child imports them afresh,
    so what they compute from sys.argv at import (ironicclient.shell binds `main(argv=
    sys.argv[1:])`) is the call's."""
    import importlib
    import re
    with open(entry) as f:
        source = f.read()
    names = []
    for match in re.finditer(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", source,
                             re.MULTILINE):
        name = match.group(1) or match.group(2)
        if name in sys.modules:  # sys and the like
            continue
        try:
            importlib.import_module(name)
            names.append(name)
        except Exception as e:  # noqa: BLE001 - the child will import it and fail visibly
            sys.stderr.write("cli_forkserver: preloading %s: %r\n" % (name, e))
    for name in names:
        sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and hasattr(sys.modules[parent], child):
            delattr(sys.modules[parent], child)
    return set(names)


def _warm_caches():
    """Fills the per-process caches of the installed packages' metadata that every call would
    otherwise rebuild (about 0.2 s of CPU each time): stevedore's entry points for sys.path
    (read from, or written to, $HOME/.cache/python-entrypoints as the CLI does) and cliff's map
    of modules to distributions (for command epilogs). They hold the same values in every child,
    as nothing is installed while the tests run. Best effort: private names of cliff and
    stevedore, skipped if they change."""
    try:
        from stevedore import _cache
        _cache._c._get_data_for_path(None)
    except Exception as e:  # noqa: BLE001
        sys.stderr.write("cli_forkserver: stevedore cache not warmed: %r\n" % e)
    try:
        from cliff import command
        command._get_distributions_by_modules()
    except Exception as e:  # noqa: BLE001
        sys.stderr.write("cli_forkserver: cliff cache not warmed: %r\n" % e)


def _learn(names, fresh):
    """Imports modules a child needed (between calls, so later children find them loaded), but
    not those each child must import afresh."""
    import importlib
    for name in names:
        if name in sys.modules or name.startswith("__") or name in fresh:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - e.g. a module only importable as a side effect
            pass


def _std_stream(fd, template, write):
    """A fresh text stream on fd, made as the interpreter makes sys.std* at start-up."""
    import io
    raw = io.FileIO(fd, "wb" if write else "rb", closefd=False)
    interactive = raw.isatty()
    buffered = io.BufferedWriter(raw) if write else io.BufferedReader(raw)
    # stdout: line-buffered on a terminal; stderr: always line-buffered (Python >= 3.9).
    line_buffering = interactive if fd != 2 else True
    return io.TextIOWrapper(buffered, encoding=template.encoding, errors=template.errors,
                            newline="\n", line_buffering=line_buffering)


def _child(entry, request, fds, report_fd):
    """In the forked child: become `entry args...` and exit as it would."""
    import atexit
    import runpy
    import traceback

    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = sys.__stdin__ = _std_stream(0, sys.__stdin__, False)
    sys.stdout = sys.__stdout__ = _std_stream(1, sys.__stdout__, True)
    sys.stderr = sys.__stderr__ = _std_stream(2, sys.__stderr__, True)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = [request["argv0"]] + list(request["args"])
    before = set(sys.modules)

    code = 0
    try:
        runpy.run_path(entry, run_name="__main__")
    except SystemExit as e:
        # As the interpreter does with an uncaught SystemExit.
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            try:
                sys.stderr.write(str(e.code) + "\n")
            except Exception:  # noqa: BLE001
                pass
            code = 1
    except BaseException:  # noqa: BLE001 - as an uncaught exception: traceback, status 1
        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    try:
        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - e.g. EPIPE; the interpreter ignores it too
            code = code or 120
    try:
        learnt = sorted(set(sys.modules) - before)
        os.write(report_fd, ("\n".join(learnt) + "\n").encode("utf-8"))
    except OSError:
        pass
    os._exit(code & 0xff)


def _read_request(conn):
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    if len(data) < _LEN.size:
        raise ValueError("short header")
    (length,) = _LEN.unpack(data[:_LEN.size])
    body = data[_LEN.size:]
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            raise ValueError("truncated header")
        body += chunk
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("expected 3 file descriptors, got %d" % len(fds))
    return json.loads(body.decode("utf-8")), fds


def serve(entry, listen_fd):
    """The server's loop: accept, fork, report; exits at EOF on standard input."""
    # The entry point's directory comes first on sys.path, as when the script itself runs.
    # What modules compute at import from the process's start (cliff's App.NAME from argv[0];
    # openstack.config's search path from the working directory and HOME) is the CLI's: the
    # server runs with the calls' environment and directory (ForkServer), and argv[0] is the
    # entry point's path.
    sys.path[0] = os.path.dirname(os.path.realpath(entry))
    sys.argv = [entry]
    fresh = _preload(entry)
    _warm_caches()

    listener = socket.socket(fileno=listen_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    control = sys.stdin.fileno()
    running = {}    # pid -> connection to the caller
    reports = {}    # read end of a child's module report -> bytes so far
    learnt = []     # module names reported, not imported yet

    def read_report(fd):
        """Reads what is there of a child's report; closes fd at EOF."""
        while True:
            if not select.select([fd], [], [], 0)[0]:
                return
            chunk = os.read(fd, 65536)
            if not chunk:
                learnt.extend(reports.pop(fd).decode("utf-8", "replace").split())
                os.close(fd)
                return
            reports[fd] += chunk

    while True:
        readable, _, _ = select.select([listener, wake_r, control] + list(reports), [], [],
                                       0 if learnt else None)
        if control in readable and not os.read(control, 4096):
            break
        if wake_r in readable:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
        for fd in readable:
            if fd in reports:
                read_report(fd)
        # Reap every child that finished; report its status to its caller.
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = running.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(("%s %d\n" % (_EXIT, status)).encode())
                except OSError:
                    pass
                conn.close()
        if listener in readable:
            conn, _ = listener.accept()
            try:
                request, fds = _read_request(conn)
            except (OSError, ValueError) as e:
                try:
                    conn.sendall(("%s %s\n" % (_ERROR, e)).encode())
                except OSError:
                    pass
                conn.close()
                continue
            report_r, report_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    listener.close()
                    conn.close()
                    for fd in [report_r, wake_r, wake_w, control] + list(reports):
                        os.close(fd)
                    for other in running.values():
                        other.close()
                    _child(entry, request, fds, report_w)
                finally:
                    os._exit(127)
            os.close(report_w)
            for fd in fds:
                os.close(fd)
            running[pid] = conn
            reports[report_r] = b""
            try:
                conn.sendall(("%s %d\n" % (_PID, pid)).encode())
            except OSError:
                pass
            continue
        if learnt and not readable:
            _learn(learnt, fresh)
            learnt = []
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2], int(sys.argv[3])))
    sys.stderr.write("usage: cli_forkserver.py serve ENTRY LISTEN_FD (see the module's doc)\n")
    sys.exit(2)
