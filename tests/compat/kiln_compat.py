"""Harness for the compatibility tests: a private kiln-server and Debian's `baremetal` CLI.

Every test class gets its own kiln-server (temporary directory, SQLite file, configuration,
[api] port = 0 and --port-file), started in setUpClass and stopped at class teardown. The CLI is
always run with an explicit endpoint and a clean environment (no OS_* variables, HOME in a
scratch directory without clouds.yaml), so nothing from the caller's OpenStack setup leaks in.

Each call runs the real entry point, /usr/bin/baremetal, in a process of its own, forked from
the class's CLI fork server (cli_forkserver.py), which imported the CLI's modules once: the
argument parsing, the API requests, the output and the exit status are the installed CLI's, but
a call costs about a tenth of the CPU of starting /usr/bin/baremetal (1-2 s, nearly all imports).
run_cli(..., real_process=True) starts /usr/bin/baremetal itself (test_baremetal_cli.py's
EntryPointTests compare both ways); KILN_CLI_FORKSERVER=0 makes every call do so.

The path of the server binary comes from the command line (--kiln-server PATH, passed by CTest)
or the KILN_SERVER_BIN environment variable. Set KILN_COMPAT_KEEP_TMP=1 to keep the temporary
directories (configuration, database, server log) for inspection.

Tests that start asynchronous actions (provision and power state changes) wait for the outcome
with KilnCliTestCase.wait_for_node, a bounded poll of GET /v1/nodes/{id} over urllib (the CLI's
own --wait polls every 10 s, far too slowly for a test). api_request sends any other request
straight to the server, with the same credentials as the CLI.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cli_forkserver  # noqa: E402  (beside this file)

# Exit status CTest treats as "skipped" (SKIP_RETURN_CODE in CMakeLists.txt).
SKIP_RETURN_CODE = 77

# The host name the server reports as conductor and in the drivers' "hosts".
CONDUCTOR_HOST = "kiln-compat-host"

HARDWARE_TYPES = ["fake-hardware", "ipmi", "manual-management", "redfish"]

SERVER_START_TIMEOUT = 30.0   # seconds to wait for the port file
SERVER_STOP_TIMEOUT = 10.0    # seconds between SIGTERM and SIGKILL
CLI_TIMEOUT = 120.0           # per CLI call (409 retries alone can take ~10 s)
HTTP_TIMEOUT = 30.0           # per direct API request (urllib)
POLL_TIMEOUT = 10.0           # wait_for_node: how long a fake-hardware flow may take
POLL_INTERVAL = 0.1           # wait_for_node: seconds between two GETs

# Direct API requests ask for the newest API version the server offers.
API_VERSION_LATEST = "latest"

KILN_SERVER_BIN = os.environ.get("KILN_SERVER_BIN", "")


def find_baremetal():
    """The Debian `baremetal` entry point (python3-ironicclient)."""
    if os.access("/usr/bin/baremetal", os.X_OK):
        return "/usr/bin/baremetal"
    return shutil.which("baremetal")


def find_htpasswd():
    """Apache's htpasswd (apache2-utils)."""
    if os.access("/usr/bin/htpasswd", os.X_OK):
        return "/usr/bin/htpasswd"
    return shutil.which("htpasswd")


def make_htpasswd_line(user, password):
    """One bcrypt htpasswd line (htpasswd -nbB)."""
    out = subprocess.run([find_htpasswd(), "-nbB", user, password], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    line = out.strip().splitlines()[0]
    if not line.startswith(user + ":$2"):
        raise RuntimeError("htpasswd did not produce a bcrypt hash: %r" % line)
    return line


class KilnServer:
    """One kiln-server process with its own temporary directory, configuration and database."""

    def __init__(self, binary, auth_strategy="noauth", users=None, roles=None, default_role=None):
        self.binary = binary
        self.auth_strategy = auth_strategy
        self.users = users or {}        # name -> password (written to htpasswd)
        self.roles = roles or {}        # name -> admin | observer ([http_basic_roles])
        self.default_role = default_role
        self.tmpdir = None
        self.proc = None
        self.port = None
        self.log_path = None
        self._log_file = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def _write_config(self):
        db_path = os.path.join(self.tmpdir, "kiln.sqlite")
        lines = [
            "[DEFAULT]",
            "auth_strategy = %s" % self.auth_strategy,
            "host = %s" % CONDUCTOR_HOST,
            "log_level = debug",
            "enabled_hardware_types = %s" % ", ".join(HARDWARE_TYPES),
        ]
        if self.auth_strategy == "http_basic":
            htpasswd_path = os.path.join(self.tmpdir, "htpasswd")
            with open(htpasswd_path, "w") as f:
                for user, password in self.users.items():
                    f.write(make_htpasswd_line(user, password) + "\n")
            lines.append("http_basic_auth_user_file = %s" % htpasswd_path)
        lines += [
            "",
            "[api]",
            "host_ip = 127.0.0.1",
            "port = 0",
            "",
            "[database]",
            # sqlite:////absolute/path (four slashes) for an absolute path.
            "connection = sqlite:///%s" % db_path,
            "",
            "[pxe]",
            # Never the host's /var/lib/kiln: pxe writes there, pxe and ipxe copy boot loaders.
            "tftp_root = %s" % os.path.join(self.tmpdir, "tftpboot"),
        ]
        if self.roles or self.default_role:
            lines += ["", "[http_basic_roles]"]
            if self.default_role:
                lines.append("default_role = %s" % self.default_role)
            for user, role in self.roles.items():
                lines.append("%s = %s" % (user, role))
        config_path = os.path.join(self.tmpdir, "kiln.conf")
        with open(config_path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return config_path

    def start(self):
        self.tmpdir = tempfile.mkdtemp(prefix="kiln-compat-")
        config_path = self._write_config()
        port_file = os.path.join(self.tmpdir, "port")
        self.log_path = os.path.join(self.tmpdir, "kiln-server.log")
        self._log_file = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "--config-file", config_path, "--port-file", port_file],
            cwd=self.tmpdir, stdin=subprocess.DEVNULL, stdout=self._log_file,
            stderr=subprocess.STDOUT)
        # Bounded poll for the port file: the server writes it once it is listening.
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            status = self.proc.poll()
            if status is not None:
                raise RuntimeError("kiln-server exited with status %s before listening\n%s"
                                   % (status, self.log_tail()))
            try:
                with open(port_file) as f:
                    text = f.read().strip()
            except FileNotFoundError:
                text = ""
            if text.isdigit() and int(text) > 0:
                self.port = int(text)
                return
            if time.monotonic() > deadline:
                raise RuntimeError("kiln-server did not write %s within %.0f s\n%s"
                                   % (port_file, SERVER_START_TIMEOUT, self.log_tail()))
            time.sleep(0.05)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=SERVER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=SERVER_STOP_TIMEOUT)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.tmpdir and not os.environ.get("KILN_COMPAT_KEEP_TMP"):
            shutil.rmtree(self.tmpdir, ignore_errors=True)
        elif self.tmpdir:
            sys.stderr.write("kiln-compat: kept %s\n" % self.tmpdir)

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read().decode("utf-8", "replace").splitlines()
        except (OSError, TypeError):
            return "(no server log)"
        return "--- kiln-server log (last %d lines) ---\n%s" % (lines, "\n".join(data[-lines:]))


class CliResult:
    def __init__(self, argv, returncode, stdout, stderr):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def describe(self):
        return ("command: %s\nexit status: %s\nstdout:\n%s\nstderr:\n%s"
                % (" ".join(self.argv), self.returncode, self.stdout, self.stderr))


class KilnCliTestCase(unittest.TestCase):
    """Base class: starts the class's kiln-server and runs `baremetal` against it.

    Subclasses set AUTH_STRATEGY and, for http_basic, USERS / ROLES / DEFAULT_ROLE and
    CLI_USER (the user the common tests run as).
    """

    AUTH_STRATEGY = "noauth"
    USERS = {}
    ROLES = {}
    DEFAULT_ROLE = None
    CLI_USER = None     # None: --os-auth-type none

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.baremetal = find_baremetal()
        if not cls.baremetal:
            raise unittest.SkipTest("the baremetal CLI (python3-ironicclient) is not installed")
        if cls.AUTH_STRATEGY == "http_basic" and not find_htpasswd():
            raise unittest.SkipTest("htpasswd (apache2-utils) is not installed")
        if not KILN_SERVER_BIN:
            raise RuntimeError("no kiln-server binary: pass --kiln-server PATH or set "
                               "KILN_SERVER_BIN")
        cls.server = KilnServer(KILN_SERVER_BIN, cls.AUTH_STRATEGY, users=cls.USERS,
                                roles=cls.ROLES, default_role=cls.DEFAULT_ROLE)
        # Registered first: class cleanups also run when setUpClass fails half-way.
        cls.addClassCleanup(cls.server.stop)
        cls.server.start()
        cls.scratch = tempfile.mkdtemp(prefix="kiln-compat-cli-")
        cls.addClassCleanup(shutil.rmtree, cls.scratch, True)
        cls.cli_env = cls._clean_env(cls.scratch)
        cls._counter = 0
        cls.cli_calls = 0
        cls.cli_real_processes = 0
        cls.cli_seconds = 0.0
        cls.addClassCleanup(cls._report_cli_usage)
        # The CLI's environment and directory: the fork server starts with them too.
        cls.cli_forkserver = cli_forkserver.ForkServer(cls.baremetal, cls.cli_env, cls.scratch)
        cls.addClassCleanup(cls.cli_forkserver.stop)
        cls.cli_forkserver.start()

    @classmethod
    def _report_cli_usage(cls):
        sys.stderr.write("kiln-compat: %s: %d baremetal calls (%d as /usr/bin/baremetal "
                         "processes), %.1f s\n"
                         % (cls.__name__, cls.cli_calls, cls.cli_real_processes,
                            cls.cli_seconds))

    @staticmethod
    def _clean_env(home):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("OS_") and k not in ("PYTHONPATH", "PYTHONHOME")}
        env["HOME"] = home          # no ~/.config/openstack/clouds.yaml
        env["LC_ALL"] = "C.UTF-8"
        return env

    # ----- naming helpers -------------------------------------------------------------------

    @classmethod
    def unique(cls, prefix):
        cls._counter += 1
        return "%s-%d" % (prefix, cls._counter)

    @classmethod
    def unique_mac(cls):
        cls._counter += 1
        n = cls._counter
        return "52:54:00:%02x:%02x:%02x" % ((n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)

    def write_file(self, name, content):
        path = os.path.join(self.scratch, name)
        with open(path, "w") as f:
            f.write(content)
        return path

    # ----- running the CLI --------------------------------------------------------------------

    def auth_args(self, user=None, password=None):
        user = user if user is not None else self.CLI_USER
        if user is None:
            return ["--os-auth-type", "none"]
        if password is None:
            password = self.USERS[user]
        return ["--os-auth-type", "http_basic", "--os-username", user,
                "--os-password", password]

    def run_cli(self, *args, user=None, password=None, input=None, auth=None,
                real_process=False):
        """Runs `baremetal <auth> --os-endpoint URL args...`; returns a CliResult.

        On the class's fork server (the entry point in a forked process), or with
        real_process=True as a /usr/bin/baremetal process of its own.
        """
        auth = auth if auth is not None else self.auth_args(user, password)
        argv = [self.baremetal] + auth + ["--os-endpoint", self.server.endpoint] + list(args)
        input = input if input is not None else ""
        started = time.monotonic()
        if real_process:
            proc = subprocess.run(argv, input=input, capture_output=True, text=True,
                                  env=self.cli_env, timeout=CLI_TIMEOUT, cwd=self.scratch)
            result = CliResult(argv, proc.returncode, proc.stdout, proc.stderr)
            type(self).cli_real_processes += 1
        else:
            result = CliResult(argv, *self.cli_forkserver.run(argv[1:], input=input,
                                                              timeout=CLI_TIMEOUT))
        type(self).cli_calls += 1
        type(self).cli_seconds += time.monotonic() - started
        return result

    def cli(self, *args, **kwargs):
        """Runs the CLI, asserts exit status 0, returns stdout."""
        result = self.run_cli(*args, **kwargs)
        if result.returncode != 0:
            self.fail("baremetal command failed\n%s\n%s"
                      % (result.describe(), self.server.log_tail(20)))
        return result.stdout

    def cli_json(self, *args, **kwargs):
        """Runs the CLI with `-f json` and returns the parsed output."""
        out = self.cli(*(list(args) + ["-f", "json"]), **kwargs)
        try:
            return json.loads(out)
        except ValueError as e:
            self.fail("output of baremetal %s is not JSON (%s):\n%s" % (" ".join(args), e, out))

    def cli_fails(self, *args, http_status=None, message=None, **kwargs):
        """Runs the CLI, asserts it fails; optionally checks "(HTTP nnn)" and a message."""
        result = self.run_cli(*args, **kwargs)
        self.assertNotEqual(result.returncode, 0,
                            "baremetal command unexpectedly succeeded\n" + result.describe())
        if http_status is not None:
            self.assertIn("HTTP %d" % http_status, result.stderr, result.describe())
        if message is not None:
            self.assertIn(message, result.stderr, result.describe())
        return result

    # ----- direct API requests (urllib) ---------------------------------------------------------

    # No proxy: the server is on the loopback interface (urllib would honour http_proxy).
    _opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def api_request(self, method, path, body=None, user=None, password=None,
                    version=API_VERSION_LATEST):
        """One request straight to kiln-server, authenticated like the CLI (CLI_USER by default).

        path is relative to the endpoint ("/v1/nodes/..."); body, when given, is sent as JSON.
        Returns an ApiResult whatever the HTTP status.
        """
        user = user if user is not None else self.CLI_USER
        url = self.server.endpoint + path
        headers = {"Accept": "application/json"}
        if version is not None:
            headers["X-OpenStack-Ironic-API-Version"] = version
        if user is not None:
            if password is None:
                password = self.USERS[user]
            token = base64.b64encode(("%s:%s" % (user, password)).encode("utf-8")).decode("ascii")
            headers["Authorization"] = "Basic " + token
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=HTTP_TIMEOUT) as response:
                return ApiResult(method, url, response.status, response.headers, response.read())
        except urllib.error.HTTPError as e:
            try:
                return ApiResult(method, url, e.code, e.headers, e.read())
            finally:
                e.close()

    def api_get_json(self, path, expected_status=200, **kwargs):
        """GET path, asserts the status, returns the parsed body."""
        result = self.api_request("GET", path, **kwargs)
        self.assertEqual(result.status, expected_status, result.describe())
        return result.json()

    @staticmethod
    def node_path(ident, suffix=""):
        return "/v1/nodes/%s%s" % (urllib.parse.quote(ident, safe=""), suffix)

    def wait_for_node(self, ident, timeout=POLL_TIMEOUT, **expected):
        """Polls GET /v1/nodes/{ident} until every field in `expected` has the given value and
        the node is not reserved (no flow running on it); returns the node.

        A bounded poll (never a fixed sleep): fails after `timeout` seconds, or at once when the
        node settles in a "... failed" provision state nobody asked for.
        """
        deadline = time.monotonic() + timeout
        path = self.node_path(ident)
        while True:
            result = self.api_request("GET", path)
            node = result.json() if result.status == 200 else None
            if node is not None and node.get("reservation") is None:
                if all(node.get(k) == v for k, v in expected.items()):
                    return node
                state = node.get("provision_state") or ""
                if (state.endswith("failed") and "provision_state" in expected
                        and expected["provision_state"] != state):
                    self.fail("node %s is in %r (last_error: %r) while waiting for %r\n%s"
                              % (ident, state, node.get("last_error"), expected,
                                 self.server.log_tail(20)))
            if time.monotonic() > deadline:
                self.fail("node %s did not reach %r within %.0f s; last seen:\n%s\n%s"
                          % (ident, expected, timeout,
                             json.dumps(node, indent=1, sort_keys=True) if node is not None
                             else result.describe(),
                             self.server.log_tail(20)))
            time.sleep(POLL_INTERVAL)

    # ----- shortcuts used by several test classes -----------------------------------------------

    def create_node(self, *extra_args, driver="fake-hardware", name=None):
        name = name or self.unique("node")
        node = self.cli_json("node", "create", "--driver", driver, "--name", name, *extra_args)
        self.assertEqual(node["name"], name)
        return node


class ApiResult:
    """The outcome of one direct API request (KilnCliTestCase.api_request)."""

    def __init__(self, method, url, status, headers, body):
        self.method = method
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def describe(self):
        return ("%s %s -> HTTP %s\n%s" % (self.method, self.url, self.status,
                                         self.body.decode("utf-8", "replace")))


def main(argv=None):
    """Entry point of a test script: [--kiln-server PATH] [unittest arguments...]."""
    global KILN_SERVER_BIN
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--kiln-server", default=KILN_SERVER_BIN)
    opts, rest = parser.parse_known_args(argv if argv is not None else sys.argv[1:])
    KILN_SERVER_BIN = opts.kiln_server
    program = unittest.main(module="__main__", argv=[sys.argv[0]] + rest, verbosity=2,
                            exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0 or len(result.skipped) == result.testsRun:
        sys.stderr.write("kiln-compat: every test was skipped\n")
        sys.exit(SKIP_RETURN_CODE)
    sys.exit(0)
