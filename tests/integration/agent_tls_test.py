#!/usr/bin/python3
"""kiln-server over HTTPS and kiln-agent verifying its certificate, on loopback.

The test makes two throwaway EC P-256 CAs with the `openssl` command: the site's CA, which
signs kiln-server's certificate (IP SAN 127.0.0.1) and the image server's, and an unrelated CA
with its own certificate for 127.0.0.1 (an impostor). kiln-server serves HTTPS with
`[agent] api_ca_file` set; the node boots with the ipxe boot interface, so its boot script
carries the kernel arguments a ramdisk would get. Agents run by hand, as in
agent_integration_test.py (a file as the disk).

Checked:
  - the node's iPXE script carries kiln.api_url=https://... and kiln.api_ca=, small enough
    for a kernel command line;
  - an agent with the insecure switch (--insecure) and no CA completes TLS handshakes with the
    server (the node is not expecting an agent yet: its lookups get 404) and warns loudly;
  - an agent given another CA (--api-ca-file) never completes a lookup: its log names the
    certificate failure and what it trusted; the server's debug log shows the handshakes it
    aborted ("unknown ca") and no lookup. It took no session: the next agent gets the token;
  - an agent given the script's kiln.api_ca= value (--api-ca, what the ramdisk reads from its
    kernel command line) looks up, heartbeats, runs automated cleaning, and deploys an image
    served over HTTPS under the same CA (downloads trust the API's CA);
  - an agent whose server turns into an impostor after the lookup (a TCP switch in front of
    kiln-server that sends every later connection to a TLS server with the other CA's
    certificate) refuses it: no byte of application data, so no token, reaches the impostor,
    and its log names the certificate failure of its heartbeats.
Usage: agent_tls_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
"""
import argparse
import functools
import http.server
import os
import re
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request

from agent_integration_test import MAC, AgentProcess, QuietHandler, set_image, sha256_file
from kiln_process import KilnServer, print_log_tails

DISK_BYTES = 32 << 20
IMAGE_BYTES = 8 << 20


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(work, name):
    key, pem = os.path.join(work, name + ".key"), os.path.join(work, name + ".pem")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", pem, "-days", "2", "-subj", "/CN=Kiln TLS test " + name)
    return key, pem


def make_server_cert(work, name, ca_key, ca_pem):
    key, csr, pem = (os.path.join(work, name + ext) for ext in (".key", ".csr", ".pem"))
    ext = os.path.join(work, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
            "-out", pem, "-days", "2", "-extfile", ext)
    return key, pem


class HttpsImageServer:
    """Serves a directory over HTTPS on 127.0.0.1 (a thread)."""

    def __init__(self, directory, cert, key):
        handler = functools.partial(QuietHandler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, name):
        return "https://127.0.0.1:%d/%s" % (self.httpd.server_address[1], name)

    def stop(self):
        self.httpd.shutdown()


class Impostor:
    """A TLS server for 127.0.0.1 with a certificate of the other CA. Records failed handshakes
    and every byte of application data a client sends after a completed one."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.refused = []   # handshake errors
        self.received = b""
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        conn.settimeout(10)
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.refused.append(str(e))
            conn.close()
            return
        with tls:
            try:
                while True:
                    data = tls.recv(65536)
                    if not data:
                        break
                    self.received += data
            except (ssl.SSLError, OSError):
                pass

    def stop(self):
        self.sock.close()


class Switch:
    """A TCP relay on 127.0.0.1: the first `real_first` connections go to `real_port`, the
    rest to `impostor_port` (the agent opens one connection per request)."""

    def __init__(self, real_port, impostor_port, real_first=1):
        self.targets = (real_port, impostor_port)
        self.real_first = real_first
        self.count = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            port = self.targets[0] if self.count <= self.real_first else self.targets[1]
            try:
                upstream = socket.create_connection(("127.0.0.1", port))
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        self.sock.close()


def wait_for_log(path, pattern, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        with open(path, errors="replace") as f:
            text = f.read()
        match = re.search(pattern, text)
        if match:
            return match, text
        if time.monotonic() > deadline:
            raise AssertionError("%s never matched %r:\n%s" % (path, pattern, text[-3000:]))
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="kiln-agent-tls-") as work:
        ca_key, ca = make_ca(work, "site-ca")
        server_key, server_cert = make_server_cert(work, "server", ca_key, ca)
        other_key, other_ca = make_ca(work, "other-ca")
        impostor_key, impostor_cert = make_server_cert(work, "impostor", other_key, other_ca)

        images = os.path.join(work, "images")
        os.mkdir(images)
        raw = os.path.join(images, "disk.raw")
        with open(raw, "wb") as f:
            f.write(os.urandom(IMAGE_BYTES))
        raw_sum = sha256_file(raw)
        disk = os.path.join(work, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(DISK_BYTES)

        images_https = HttpsImageServer(images, server_cert, server_key)
        impostor = Impostor(impostor_cert, impostor_key)
        server = KilnServer(args.server, work,
                            "[DEFAULT]\ndebug = true\nenabled_hardware_types = fake-hardware\n"
                            "enabled_deploy_interfaces = direct, fake\n"
                            "enabled_boot_interfaces = ipxe, fake\n"
                            "[api]\nenable_ssl_api = true\n"
                            "[ssl]\ncert_file = %s\nkey_file = %s\n"
                            "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 0\n"
                            "deploy_callback_timeout = 120\nclean_callback_timeout = 120\n"
                            "[agent]\nheartbeat_interval = 1\ncommand_heartbeat_interval = 1\n"
                            "api_ca_file = %s\n" % (server_cert, server_key, ca),
                            cafile=ca)
        logs = []
        agents = []
        switch = None

        def boot_agent(name, extra_args, api_url=None):
            log = os.path.join(work, "agent-%s.log" % name)
            logs.append(log)
            a = AgentProcess(args.agent, server, disk, log, extra_args, api_url)
            agents.append(a)
            return a, log

        try:
            server.start()
            assert server.url.startswith("https://"), server.url
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "fake-hardware", "name": "tls-node", "deploy_interface": "direct",
                "boot_interface": "ipxe",
                "driver_info": {"deploy_kernel": "http://127.0.0.1:9/kernel",
                                "deploy_ramdisk": "http://127.0.0.1:9/ramdisk"}})
            assert status == 201, node
            status, body = server.call("POST", "/v1/ports", {"address": MAC, "node_uuid": node["uuid"]})
            assert status == 201, body

            # The insecure switch, before the node expects an agent: the handshake succeeds
            # without any CA (the server answers the lookup with 404), and the agent warns.
            insecure, insecure_log = boot_agent("insecure", ["--insecure"])
            match, text = wait_for_log(insecure_log, r"lookup failed; retrying error=.*")
            assert "TLS handshake" not in match.group(0) and "404" in match.group(0), match.group(0)
            assert "TLS certificate verification is OFF" in text, text
            assert "tls_ca=\"none (insecure)\"" in text or "tls_ca=none (insecure)" in text, text
            assert insecure.stop() == 0
            print("insecure switch: handshake accepted without a CA, warning logged")

            server.provision("tls-node", {"target": "manage"})
            server.wait_for("tls-node", {"manageable"}, unlocked=True)
            server.provision("tls-node", {"target": "provide"})
            server.wait_for("tls-node", {"clean wait"}, unlocked=True)

            # The boot script a ramdisk would get: the API's CA rides on the kernel line.
            req = urllib.request.Request(server.url + "/boot/%s.ipxe" % MAC.replace(":", "-"))
            with urllib.request.urlopen(req, timeout=10, context=server.ssl_context) as resp:
                script = resp.read().decode()
            kernel_line = next(line for line in script.splitlines() if line.startswith("kernel "))
            assert "kiln.api_url=https://127.0.0.1:%d " % server.port in kernel_line, kernel_line
            inline_ca = re.search(r" kiln\.api_ca=(\S+)", kernel_line).group(1)
            assert len(kernel_line) < 2048, len(kernel_line)
            print("boot script ok: kiln.api_ca= takes %d bytes, the kernel line %d"
                  % (len("kiln.api_ca=") + len(inline_ca), len(kernel_line)))

            # Another CA: the agent refuses the server's certificate and never looks up.
            wrong, wrong_log = boot_agent("wrong-ca", ["--api-ca-file", other_ca])
            match, text = wait_for_log(wrong_log, r"lookup failed; retrying error=.*TLS handshake.*")
            line = match.group(0)
            assert "(certificate: unable to get local issuer certificate)" in line, line
            assert "checked against the CA file %s (--api-ca-file)" % other_ca in line, line
            assert "looked up" not in text, text
            assert wrong.stop() == 0
            # The server saw handshakes the agent aborted, and no request: no lookup, no token.
            with open(server.log_path, errors="replace") as f:
                server_text = f.read()
            aborted = [l for l in server_text.splitlines()
                       if "closing a TLS connection" in l and "unknown ca" in l]
            assert aborted, server_text[-3000:]
            assert "agent looked up" not in server_text, server_text[-3000:]
            print("wrong CA refused:", line[line.index("error="):][:240])

            # The server's CA, as the ramdisk reads it from kiln.api_ca=: cleaning, then a
            # deployment from an HTTPS image server under the same CA.
            good, good_log = boot_agent("good", ["--api-ca", inline_ca])
            n = server.wait_for("tls-node", {"available", "clean failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "available", n["last_error"]
            with open(server.log_path, errors="replace") as f:
                assert f.read().count("agent looked up; token issued") == 1
            _, text = wait_for_log(good_log, r"looked up")
            assert "tls_ca=--api-ca" in text, text
            set_image(server, "tls-node", images_https.url("disk.raw"), raw_sum)
            server.provision("tls-node", {"target": "active"})
            n = server.wait_for("tls-node", {"active", "deploy failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert good.wait_exit(30) == 0
            assert sha256_file(disk, IMAGE_BYTES) == raw_sum, "image bytes differ on disk"
            print("cleaning and HTTPS deploy ok")

            # An impostor after the lookup: undeploying boots a new agent session (cleaning).
            server.provision("tls-node", {"target": "deleted"})
            server.wait_for("tls-node", {"clean wait"}, timeout=30, unlocked=True)
            switch = Switch(server.port, impostor.port)
            fooled, fooled_log = boot_agent(
                "impostor", ["--api-ca-file", ca], api_url="https://127.0.0.1:%d" % switch.port)
            wait_for_log(fooled_log, r"looked up")
            match, text = wait_for_log(fooled_log, r"heartbeat failed; retrying error=.*TLS handshake.*")
            line = match.group(0)
            assert "(certificate: " in line and "checked against the CA file %s" % ca in line, line
            deadline = time.monotonic() + 10
            while not impostor.refused and time.monotonic() < deadline:
                time.sleep(0.1)
            assert fooled.stop() == 0
            assert impostor.refused, "the impostor saw no handshake"
            assert impostor.received == b"", impostor.received[:200]
            print("impostor refused: %d handshakes failed, 0 bytes received; agent: %s"
                  % (len(impostor.refused), line[line.index("error="):][:200]))
        except BaseException:
            print_log_tails([server.log_path] + logs)
            raise
        finally:
            for a in agents:
                a.stop()
            server.stop()
            images_https.stop()
            impostor.stop()
            if switch:
                switch.stop()
    print("agent TLS test passed")


if __name__ == "__main__":
    main()
