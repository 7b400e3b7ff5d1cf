#!/usr/bin/python3
"""Runs one module of python3-ironicclient's functional test suite against kiln-server.

The suite ships with Debian's python3-ironicclient (ironicclient/tests/functional/osc/v1) and
drives the real `openstack baremetal ...` CLI. This driver:

  1. starts its own kiln-server in a fresh temporary directory ([api] port = 0, --port-file,
     SQLite database in the temporary directory) and waits, with a bounded poll, for the port
     file to appear;
  2. builds the working directory the suite expects: .tox/$OS_TESTENV_NAME/bin/{openstack,
     baremetal} and a test.conf with a [functional] section (auth_strategy = noauth,
     ironic_url = http://127.0.0.1:PORT). `openstack` (the only CLI the suite runs) is a shim
     that runs /usr/bin/openstack on a CLI fork server (tests/compat/cli_forkserver.py): each
     call is the real entry point in a process of its own, forked from one that imported the
     CLI's modules once, instead of a fresh interpreter importing them again (1-2 s of CPU per
     call); `baremetal` is a symlink to /usr/bin/baremetal. With KILN_CLI_FORKSERVER=0 both are
     symlinks to the system CLIs;
  3. runs the module's tests in one process, as stestr's worker would (`python3 -m subunit.run
     MODULE`, the subunit stream into a file); --runner stestr runs `stestr run` over the
     suite instead, with its test listing and one worker per CPU (--serial, --concurrency);
  4. prints one line per test, then the details (traceback, captured output) of every test
     that did not pass (a skip counts as not passed: the suite only skips when it finds no
     test.conf), and the tail of the server log if anything failed;
  5. stops the server and exits 0 only if every test of the module passed (a module that ran no
     test at all, e.g. because it failed to import, counts as a failure).

Usage:
  run_ironicclient_functional.py --server build/server/kiln-server \
      --module test_baremetal_node_basic [--keep-tmp]
  run_ironicclient_functional.py --server ... --module test_baremetal_node_basic \
      --filter 'test_create_node'        # only the tests whose id matches the regex too
  run_ironicclient_functional.py --server ... --module ... --runner stestr [--serial] \
      [--concurrency N]

Must run under Debian's /usr/bin/python3 (it needs python3-stestr, python3-subunit,
python3-testtools, python3-tempest and python3-ironicclient; scripts/install-deps.sh installs
them).
"""

import argparse
import ctypes
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "compat"))
import cli_forkserver  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"
TOP_DIR = "/usr/lib/python3/dist-packages"
SUITE_DIR = os.path.join(TOP_DIR, "ironicclient/tests/functional/osc/v1")
CLIS = {"openstack": "/usr/bin/openstack", "baremetal": "/usr/bin/baremetal"}
TESTENV_NAME = "kiln"
HARDWARE_TYPES = "fake-hardware, ipmi, redfish, manual-management"

# Environment variables that would redirect the CLIs or the Python interpreter elsewhere.
SCRUBBED_ENV_PREFIXES = ("OS_", "PYTHON", "VIRTUAL_ENV", "IRONIC")
SCRUBBED_ENV_KEEP = {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}


def log(msg):
    print("[functional] " + msg, flush=True)


def die_with_parent():
    """preexec_fn: the child gets SIGTERM if this driver dies (e.g. killed by a ctest timeout),
    so no kiln-server or stestr outlives it."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def on_signal(signum, frame):
    # Turn SIGTERM/SIGHUP into an exception so that the finally blocks stop the server.
    raise SystemExit(128 + signum)


def clean_env():
    env = {}
    for key, value in os.environ.items():
        if key.startswith(SCRUBBED_ENV_PREFIXES) and key not in SCRUBBED_ENV_KEEP:
            continue
        env[key] = value
    # The CLIs are /usr/bin scripts (#!/usr/bin/python3); keep /usr/bin ahead of any pyenv
    # shims so that anything resolved through PATH is Debian's too.
    env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
    return env


class KilnServer:
    """A kiln-server in its own temporary directory, on a free port."""

    def __init__(self, binary, workdir, start_timeout):
        self.binary = binary
        self.dir = os.path.join(workdir, "server")
        self.start_timeout = start_timeout
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.dir, "kiln-server.log")

    def start(self):
        os.makedirs(self.dir)
        conf = os.path.join(self.dir, "kiln.conf")
        db = os.path.join(self.dir, "kiln.sqlite")
        with open(conf, "w") as f:
            f.write(
                "[DEFAULT]\n"
                "auth_strategy = noauth\n"
                "enabled_hardware_types = %s\n"
                "log_level = info\n"
                "\n[api]\nhost_ip = 127.0.0.1\nport = 0\n"
                "\n[database]\nconnection = sqlite:///%s\n"
                "\n[pxe]\ntftp_root = %s/tftpboot\n" % (HARDWARE_TYPES, db, self.dir)
            )
        port_file = os.path.join(self.dir, "port")
        logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "--config-file", conf, "--port-file", port_file],
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        logf.close()
        deadline = time.monotonic() + self.start_timeout
        while True:
            # kiln-server writes the file to PORTFILE.tmp and renames it: never partial.
            if os.path.exists(port_file):
                with open(port_file) as f:
                    self.port = int(f.read().strip())
                break
            if self.proc.poll() is not None:
                raise RuntimeError(
                    "kiln-server exited with status %s before listening:\n%s"
                    % (self.proc.returncode, self.log_tail())
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "kiln-server did not write its port file within %ss:\n%s"
                    % (self.start_timeout, self.log_tail())
                )
            time.sleep(0.05)
        log("kiln-server pid %d listening on 127.0.0.1:%d" % (self.proc.pid, self.port))

    def stop(self, timeout=15):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log("kiln-server did not stop within %ss of SIGTERM; killing it" % timeout)
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines=60):
        try:
            with open(self.log_path, errors="replace") as f:
                content = f.readlines()
        except OSError:
            return "(no server log)"
        return "".join(content[-lines:])


def run_process_group(cmd, cwd, env, stdout=subprocess.DEVNULL):
    """Runs cmd in its own process group and returns (returncode, stderr bytes); if this driver
    is interrupted, the whole group (the runner, its workers and the CLIs they run) is
    terminated."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=die_with_parent)
    try:
        _, stderr = proc.communicate()
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, None, stderr)


def make_workdir(workdir, port, forkservers):
    """forkservers: CLI name -> running cli_forkserver.ForkServer (the others are symlinks)."""
    bindir = os.path.join(workdir, ".tox", TESTENV_NAME, "bin")
    os.makedirs(bindir, exist_ok=True)
    for name, target in CLIS.items():
        if name in forkservers:
            cli_forkserver.write_shim(os.path.join(bindir, name), forkservers[name].socket_path,
                                      target)
        else:
            os.symlink(target, os.path.join(bindir, name))
    conf = os.path.join(workdir, "test.conf")
    with open(conf, "w") as f:
        f.write(
            "[functional]\n"
            "auth_strategy = noauth\n"
            "ironic_url = http://127.0.0.1:%d\n" % port
        )
    return conf


def read_results(stream_bytes):
    """Returns [(test_id, status, details_text)] of a subunit v2 stream, in run order."""
    import subunit
    import testtools

    results = []

    def on_test(test):
        details = []
        for name, content in sorted(test["details"].items()):
            try:
                text = content.as_text()
            except Exception:  # binary attachment
                continue
            if text.strip():
                details.append("--- %s ---\n%s" % (name, text.rstrip()))
        # subunit.run announces each test ("exists") before running it; stestr's repository
        # keeps the outcome only.
        if test["status"] == "exists":
            announced.append(test["id"])
        else:
            results.append((test["id"], test["status"], "\n".join(details)))

    announced = []
    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream_bytes), non_subunit_name="stdout")
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        case.run(result)
    finally:
        result.stopTestRun()
    # A test announced but never run (e.g. the runner died) did not pass.
    ran = {test_id for test_id, _, _ in results}
    results += [(test_id, "inprogress", "announced, never run") for test_id in announced
                if test_id not in ran]
    return results


def read_test_ids(stream_bytes):
    """The test ids of a `subunit.run --list` stream."""
    import subunit
    import testtools

    ids = []
    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream_bytes), non_subunit_name="stdout")
    result = testtools.StreamToDict(lambda test: ids.append(test["id"]))
    result.startTestRun()
    try:
        case.run(result)
    finally:
        result.stopTestRun()
    return ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="path of the kiln-server binary")
    parser.add_argument("--module", required=True,
                        help="test module of osc/v1, e.g. test_baremetal_node_basic")
    parser.add_argument("--filter", default=None,
                        help="extra regex a test id must also match (debugging)")
    parser.add_argument("--runner", choices=("subunit", "stestr"), default="subunit",
                        help="subunit (default): one `python3 -m subunit.run` process; stestr: "
                             "`stestr run` with its workers")
    parser.add_argument("--serial", action="store_true",
                        help="--runner stestr: run the tests one at a time")
    parser.add_argument("--concurrency", type=int, default=0,
                        help="--runner stestr: worker count (default: stestr's, one per CPU)")
    parser.add_argument("--start-timeout", type=float, default=30.0,
                        help="seconds to wait for kiln-server's port file")
    parser.add_argument("--keep-tmp", action="store_true",
                        help="keep the temporary directory (also: KILN_KEEP_TMP=1)")
    args = parser.parse_args()

    if not re.fullmatch(r"test_[a-z0-9_]+", args.module):
        parser.error("--module must be a module name like test_baremetal_node_basic")
    module_file = os.path.join(SUITE_DIR, args.module + ".py")
    missing = [p for p in [args.server, module_file, *CLIS.values()] if not os.path.exists(p)]
    if missing:
        log("missing: %s (run scripts/install-deps.sh and build kiln-server)" % ", ".join(missing))
        return 2

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    keep = args.keep_tmp or os.environ.get("KILN_KEEP_TMP") == "1"
    workdir = tempfile.mkdtemp(prefix="kiln-functional-%s-" % args.module)
    server = KilnServer(os.path.abspath(args.server), workdir, args.start_timeout)
    env = clean_env()
    env["IRONICCLIENT_TEST_CONFIG"] = os.path.join(workdir, "test.conf")
    env["OS_TESTENV_NAME"] = TESTENV_NAME
    forkservers = {}
    ok = False
    try:
        server.start()
        if cli_forkserver.enabled():
            # The CLI runs with stestr's environment, in the work directory; so does its fork
            # server.
            forkservers["openstack"] = cli_forkserver.ForkServer(
                CLIS["openstack"], env, workdir,
                log_path=os.path.join(workdir, "openstack-forkserver.log")).start()
        make_workdir(workdir, server.port, forkservers)

        test_filter = r"osc\.v1\.%s\." % re.escape(args.module)
        if args.filter:
            test_filter = r"%s.*%s" % (test_filter, args.filter)
        if args.runner == "stestr":
            cmd = [SYSTEM_PYTHON, "-m", "stestr", "--test-path", SUITE_DIR, "--top-dir",
                   TOP_DIR, "run", "--subunit"]
            if args.serial:
                cmd.append("--serial")
            elif args.concurrency:
                cmd += ["--concurrency", str(args.concurrency)]
            cmd.append(test_filter)
        else:
            # What a stestr worker runs, for the module's tests (or those --filter picks).
            module = "ironicclient.tests.functional.osc.v1." + args.module
            cmd = [SYSTEM_PYTHON, "-m", "subunit.run"]
            if args.filter:
                listed = subprocess.run(cmd + ["--list", module], cwd=workdir, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                ids = [t for t in read_test_ids(listed.stdout) if re.search(test_filter, t)]
                load_list = os.path.join(workdir, "load-list")
                with open(load_list, "w") as f:
                    f.write("".join(t + "\n" for t in ids))
                cmd += ["--load-list", load_list]
            cmd.append(module)
        log("running: %s (in %s)" % (" ".join(cmd), workdir))
        started = time.monotonic()
        # The subunit stream (with the tests' details) goes to a file and is read back below.
        stream_path = os.path.join(workdir, "results.subunit")
        with open(stream_path, "wb") as stream:
            run = run_process_group(cmd, cwd=workdir, env=env, stdout=stream)
        elapsed = time.monotonic() - started
        with open(stream_path, "rb") as stream:
            results = read_results(stream.read())

        counts = {}
        for test_id, status, _ in results:
            counts[status] = counts.get(status, 0) + 1
        short = lambda test_id: re.sub(r"^ironicclient\.tests\.functional\.", "", test_id)
        for test_id, status, _ in results:
            print("%-8s %s" % (status, short(test_id)))
        # The suite's only skip is "no test config found", i.e. a broken harness: not a pass.
        bad = [(t, s, d) for (t, s, d) in results if s != "success"]
        for test_id, status, details in bad:
            print("\n======== %s: %s\n%s" % (status.upper(), short(test_id), details))
        summary = ", ".join("%s=%d" % kv for kv in sorted(counts.items())) or "no tests"
        log("%s: %d tests in %.1fs: %s" % (args.module, len(results), elapsed, summary))

        ok = bool(results) and not bad
        if not results:
            log("no test results; the runner exited %d:\n%s"
                % (run.returncode, run.stderr.decode(errors="replace")))
        elif not bad and run.returncode != 0:
            ok = False
            log("every test passed but the runner exited %d:\n%s"
                % (run.returncode, run.stderr.decode(errors="replace")))
        if not ok:
            print("\n======== kiln-server log (tail)\n" + server.log_tail())
            for name, forkserver in forkservers.items():
                tail = forkserver.log_tail()
                if tail:
                    print("\n======== %s fork server log (tail)\n%s" % (name, tail))
    except RuntimeError as e:
        log(str(e))
    finally:
        for forkserver in forkservers.values():
            forkserver.stop()
        server.stop()
        if keep:
            log("kept %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
