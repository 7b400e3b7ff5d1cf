"""A private kiln-server process for the integration tests: a temporary SQLite database,
[api] port = 0 and --port-file, plus a small JSON client over urllib.

    server = KilnServer("build/server/kiln-server", workdir, "[DEFAULT]\\n...")
    server.start(); server.call("GET", "/v1/nodes"); server.stop()
"""
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

VERSION = "1.78"


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL if `proc` has not exited within `timeout` seconds."""
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def print_log_tails(paths, lines=60):
    """Writes the last `lines` lines of each existing log file to stderr (after a failure)."""
    for path in paths:
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                sys.stderr.write("---- %s (tail) ----\n%s\n" % (path, "".join(f.readlines()[-lines:])))


class KilnServer:
    """`cafile`: the server serves HTTPS (the test's config enables it) and calls verify its
    certificate against this CA."""

    def __init__(self, binary, workdir, config="", cafile=None, port=0, database=None):
        """`database`: a [database] connection URL (default: an SQLite file in `workdir`)."""
        self.binary = binary
        self.database = database or "sqlite:///%s/kiln.sqlite" % workdir
        self.fixed_port = port  # 0: a free one, read from --port-file
        self.workdir = workdir
        self.config = config
        self.proc = None
        self.port = None
        self.log_path = os.path.join(workdir, "server.log")
        self.log = open(self.log_path, "ab")
        self.ssl_context = ssl.create_default_context(cafile=cafile) if cafile else None

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.ssl_context else "http", self.port)

    def start(self):
        conf = os.path.join(self.workdir, "kiln.conf")
        with open(conf, "w") as f:
            # Test sections first; INI readers merge repeated sections.
            f.write(self.config)
            f.write("\n[api]\nport = %d\n[database]\nconnection = %s\n" % (self.fixed_port, self.database))
            if "tftp_root" not in self.config:
                # Never the host's /var/lib/kiln: pxe writes there, pxe and ipxe copy loaders.
                f.write("[pxe]\ntftp_root = %s/tftpboot\n" % self.workdir)
        portfile = os.path.join(self.workdir, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        self.proc = subprocess.Popen([self.binary, "--config-file", conf, "--port-file", portfile],
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while not os.path.exists(portfile) or os.path.getsize(portfile) == 0:
            if self.proc.poll() is not None:
                raise RuntimeError("kiln-server exited with %s" % self.proc.returncode)
            if time.monotonic() > deadline:
                raise RuntimeError("kiln-server did not start")
            time.sleep(0.05)
        with open(portfile) as f:
            self.port = int(f.read())

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        stop_process(self.proc)

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"X-OpenStack-Ironic-API-Version": VERSION,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.ssl_context) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else None

    def node(self, ident):
        status, body = self.call("GET", "/v1/nodes/%s" % ident)
        assert status == 200, (status, body)
        return body

    def provision(self, ident, body):
        status, resp = self.call("PUT", "/v1/nodes/%s/states/provision" % ident, body)
        assert status == 202, (ident, body, status, resp)

    def wait_for(self, ident, states, timeout=20, unlocked=False):
        """Waits for one of `states`; with `unlocked`, also for the node's reservation to be
        released (a flow may reach its state before its background work lets go of the node,
        as Ironic's abort of cleaning does; a verb sent in between gets 409)."""
        deadline = time.monotonic() + timeout
        while True:
            n = self.node(ident)
            if n["provision_state"] in states and (not unlocked or n["reservation"] is None):
                return n
            if time.monotonic() > deadline:
                raise AssertionError("%s stayed in %s (wanted %s): %s" % (
                    ident, n["provision_state"], states, n.get("last_error")))
            time.sleep(0.1)
