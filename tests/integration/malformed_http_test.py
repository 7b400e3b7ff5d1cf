#!/usr/bin/python3
"""Malformed HTTP against a running kiln-server, as an attacker or a careless client sends it.

Each case goes on its own connection, byte-exact, sometimes split across TCP segments. For
every answer: no 5xx, an Ironic error body (valid UTF-8 JSON whose error_message holds a JSON
faultstring) for every 4xx, and the connection closed after any framing error. Afterwards:
the server still runs and the database holds exactly what it held before. Then a burst of
randomly mutated requests (a fixed seed), the open-file limit and the connection cap.

The cases of a batch go out on CONCURRENCY connections at a time (each still alone on its
connection): an exchange mostly waits for the server to close or for its read timeout, so one
at a time the test took over three minutes of waiting. Results are checked and printed in
the cases' order.

    malformed_http_test.py --server build/server/kiln-server
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_process import KilnServer, print_log_tails  # noqa: E402

V = b"X-OpenStack-Ironic-API-Version: 1.78\r\n"
CONFIG = """[DEFAULT]
enabled_hardware_types = fake-hardware
%s
[api]
max_request_body_size = 4096
client_socket_timeout = 5
[conductor]
sync_power_state_interval = 0
"""


def exchange(port, segments, read_timeout=3.0):
    """Sends `segments` (a pause between them, so they travel as separate TCP segments) and
    reads until the server closes or `read_timeout` passes. Returns (bytes, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        for i, seg in enumerate(segments):
            if i:
                time.sleep(0.05)
            try:
                s.sendall(seg)
            except (BrokenPipeError, ConnectionResetError):
                break
        s.settimeout(read_timeout)
        out = b""
        closed = False
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    closed = True
                    break
                out += d
        except socket.timeout:
            pass
        except ConnectionResetError:
            closed = True
        return out, closed
    finally:
        s.close()


# Connections in flight at once (exchange_all).
CONCURRENCY = 8


def exchange_all(port, batch, read_timeout=3.0):
    """exchange() for every segment list of `batch`, CONCURRENCY at a time; the results in the
    batch's order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        return list(pool.map(lambda segments: exchange(port, segments, read_timeout), batch))


def split_responses(data):
    """Splits raw bytes into (status, headers, body) tuples; raises on malformed framing."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            raise AssertionError("truncated response head: %r" % data[:200])
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", lines[0] + b" ")
        if not m:
            raise AssertionError("bad status line %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode("latin-1")
        status = int(m.group(1))
        length = int(headers.get("content-length", "0"))
        body, data = rest[:length], rest[length:]
        if len(body) != length:
            raise AssertionError("truncated body (%d of %d)" % (len(body), length))
        out.append((status, headers, body))
    return out


def check_error_format(status, headers, body, where):
    assert status < 500, "%s: got %d %r" % (where, status, body[:300])
    if status < 400 or status == 100:
        return
    assert headers.get("content-type", "").startswith("application/json"), (where, headers)
    text = body.decode("utf-8")  # raises on invalid UTF-8
    doc = json.loads(text)
    if "error_message" in doc:
        inner = json.loads(doc["error_message"])
        assert isinstance(inner.get("faultstring"), str) and inner["faultstring"], (where, doc)
        assert "json.exception" not in inner["faultstring"], (where, inner)
    else:  # the http_basic middleware's own format
        assert isinstance(doc["error"]["message"], str), (where, doc)


def snapshot(server, auth):
    state = {}
    for path in ("/v1/nodes/detail", "/v1/ports/detail", "/v1/deploy_templates?detail=true",
                 "/v1/chassis/detail", "/v1/portgroups/detail"):
        status, body = call(server.port, "GET", path, auth=auth)
        assert status == 200, (path, status, body)
        for items in body.values():
            if isinstance(items, list):
                for item in items:
                    item.pop("updated_at", None)
        state[path] = body
    return state


def call(port, method, path, body=None, auth=b"", extra=b""):
    data = b"" if body is None else json.dumps(body).encode()
    req = (b"%s %s HTTP/1.1\r\nHost: x\r\n" % (method.encode(), path.encode()) + V + auth + extra +
           b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data)
    raw, _ = exchange(port, [req])
    [(status, headers, payload)] = split_responses(raw)
    return status, json.loads(payload) if payload else None


def with_body(head, body):
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def framing_cases(auth):
    """(name, segments, must_close). must_close: the server must end the connection."""
    smuggled = b"DELETE /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + V + auth + b"\r\n"
    post = b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + V + auth
    cases = [
        ("CL overflow", [post + b"Content-Length: 99999999999999999999\r\n\r\n"], True),
        ("CL 2^64-1", [post + b"Content-Length: 18446744073709551615\r\n\r\n"], True),
        ("CL negative", [post + b"Content-Length: -5\r\n\r\n"], True),
        ("CL not a number", [post + b"Content-Length: 12abc\r\n\r\n"], True),
        ("two CLs", [post + b"Content-Length: 2\r\nContent-Length: %d\r\n\r\n{}" % len(smuggled), smuggled], True),
        ("CL and TE", [post + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", smuggled], True),
        ("TE gzip", [post + b"Transfer-Encoding: gzip\r\n\r\n", smuggled], True),
        ("TE with space before colon", [post + b"Transfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", smuggled], True),
        ("bad chunk size", [post + b"Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n"], True),
        ("chunk size not hex", [post + b"Transfer-Encoding: chunked\r\n\r\nxyz\r\n" + smuggled], True),
        ("body over the limit", [post + b"Content-Length: 5000\r\n\r\n" + b"{" * 100], True),
        ("chunked body over the limit", [post + b"Transfer-Encoding: chunked\r\n\r\n" + b"1000\r\n" + b"a" * 4096 + b"\r\n10\r\n" + b"b" * 16 + b"\r\n0\r\n\r\n"], True),
        ("header over 80 KiB", [b"GET /v1 HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 * 1024) + b"\r\n\r\n"], True),
        ("URL over 80 KiB", [b"GET /v1/nodes/" + b"a" * (100 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n"], True),
        ("method not a token", [b"GE(T /v1 HTTP/1.1\r\nHost: x\r\n\r\n"], True),
        ("space before a header colon", [post + b"Content-Length : 3\r\n\r\n{}}"], True),
        ("folded header", [post + b"X-A: 1\r\n Content-Length: 3\r\n\r\n{}}"], True),
        ("bare CR in a header", [post + b"X-A: 1\rContent-Length: 3\r\n\r\n{}}"], True),
        ("bytes after chunk data", [post + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XY" + smuggled], True),
        ("two Host headers", [b"GET /v1 HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"], True),
        ("HTTP/2.0", [b"GET /v1 HTTP/2.0\r\nHost: x\r\n\r\n"], True),
        ("HTTP/0.9 request line", [b"GET /v1\r\n\r\n"], True),
        ("bad version text", [b"GET /v1 HTTX/1.1\r\nHost: x\r\n\r\n"], True),
        ("NUL in header", [b"GET /v1 HTTP/1.1\r\nHost: x\0y\r\n\r\n"], True),
        ("control char in header", [b"GET /v1 HTTP/1.1\r\nX-A: a\x01b\r\n\r\n"], True),
        ("space in URL", [b"GET /v1/no des HTTP/1.1\r\nHost: x\r\n\r\n"], True),
        ("binary garbage", [bytes(range(256)) * 4], True),
        ("TLS hello on plain HTTP", [bytes.fromhex("16030100c4010000c00303") + os.urandom(64)], True),
        ("CONNECT", [b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: x\r\n\r\n", b"SSH-2.0-x\r\n"], True),
        # Not framing errors: answered, the connection stays usable.
        ("unknown method", [b"BREW /v1 HTTP/1.1\r\nHost: x\r\n\r\n"], False),
        ("lowercase method", [b"get /v1 HTTP/1.1\r\nHost: x\r\n\r\n"], False),
        ("upgrade ignored", [b"GET /v1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
                             b"GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"], False),
        ("unsupported content type", [post + b"Content-Type: foo\r\nContent-Length: %d\r\n\r\n" % len(smuggled), smuggled], False),
        ("json-patch media type", [b"PATCH /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + V + auth +
                                   b"Content-Type: application/json-patch+json\r\nContent-Length: 2\r\n\r\n[]"], False),
        ("invalid UTF-8 path", [b"GET /v1/nodes/\xff\xfe\xc0\xaf HTTP/1.1\r\nHost: x\r\n" + V + auth + b"\r\n"], False),
        ("invalid UTF-8 query", [b"GET /v1/nodes?name=\xff&fields=%ff%fe HTTP/1.1\r\nHost: x\r\n" + V + auth + b"\r\n"], False),
        ("bad percent-encoding", [b"GET /v1/nodes/%zz%4 HTTP/1.1\r\nHost: x\r\n" + V + auth + b"\r\n"], False),
        ("invalid UTF-8 JSON", [with_body(post, b"{\"name\":\"\xff\"}")], False),
        ("deep JSON", [with_body(post, b"[" * 2000 + b"]" * 2000)], False),
        ("deep JSON in chunks", [post + b"Transfer-Encoding: chunked\r\n\r\nfa0\r\n" + b"{\"a\":" * 800 + b"\r\n0\r\n\r\n"], False),
        ("huge number", [with_body(post, b"{\"driver\":\"fake-hardware\",\"extra\":{\"a\":1" + b"0" * 400 + b"}}")], False),
        ("bad version header", [b"GET /v1/nodes HTTP/1.1\r\nHost: x\r\nX-OpenStack-Ironic-API-Version: 1.\xff\r\n" + auth + b"\r\n"], False),
        ("patch to a missing path", [with_body(b"PATCH /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + V + auth,
                                               b"[{\"op\":\"remove\",\"path\":\"/driver_info/nope/x\"}]")], False),
    ]
    return cases


def truncated_cases(auth):
    """Requests cut short, then closed by the client: nothing may run."""
    post = b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Content-Length: 60\r\n\r\n"
    body = b'{"driver": "fake-hardware", "name": "truncated"}'
    return [
        [b"GET /v1/nodes HTT"],
        [b"DELETE /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + V + auth],  # no blank line
        [post + body[:20]],
        [b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Transfer-Encoding: chunked\r\n\r\n30\r\n" + body[:48] + b"\r\n"],
    ]


def mutate(rng, seed_requests):
    req = bytearray(rng.choice(seed_requests))
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(6)
        pos = rng.randrange(len(req) + 1)
        if op == 0 and req:
            del req[pos % len(req)]
        elif op == 1:
            req[pos:pos] = bytes([rng.randrange(256)])
        elif op == 2 and req:
            req[pos % len(req)] = rng.choice(b"\r\n :{}[]\"\\\x00\xff0123456789-")
        elif op == 3:
            req[pos:pos] = rng.choice([b"\r\n", b"\r\n\r\n", b"Content-Length: 7\r\n",
                                       b"Transfer-Encoding: chunked\r\n", b"[" * 70, b"%", b"\xc3("])
        elif op == 4:
            req = req[:pos]
        else:
            cut = rng.randrange(len(req) + 1)
            req = req[:cut] + req[:cut]  # duplicate a prefix: pipelining-like repeats
    return bytes(req)


def run_checks(server, auth):
    port = server.port
    status, _ = call(port, "POST", "/v1/nodes",
                     {"driver": "fake-hardware", "name": "victim",
                      "driver_info": {"ipmi_password": "s3cret", "nested": {"password": "p"}}}, auth=auth)
    assert status == 201, status
    status, _ = call(port, "POST", "/v1/deploy_templates",
                     {"name": "CUSTOM_T", "steps": [{"interface": "deploy", "step": "erase_devices",
                                                     "args": {}, "priority": 10}]}, auth=auth)
    assert status == 201, status
    before = snapshot(server, auth)

    # Pipelined: three requests in one segment, three answers in order.
    pipelined = (b"GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n" +
                 b"GET /v1/nodes/victim?fields=name HTTP/1.1\r\nHost: x\r\n" + V + auth + b"\r\n" +
                 b"GET /v1/nodes/none HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Connection: close\r\n\r\n")
    raw, closed = exchange(port, [pipelined])
    answers = split_responses(raw)
    assert [a[0] for a in answers] == [200, 200, 404], [a[0] for a in answers]
    assert b"victim" in answers[1][2] and closed

    cases = framing_cases(auth)
    for (name, segments, must_close), (raw, closed) in zip(
            cases, exchange_all(port, [segments for _, segments, _ in cases])):
        try:
            answers = split_responses(raw)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (name, e))
        assert answers, "%s: no answer" % name
        for status, headers, body in answers:
            check_error_format(status, headers, body, name)
        if must_close:
            assert answers[-1][0] >= 400, (name, answers[-1][0])
            assert closed, "%s: connection left open after a framing error" % name
            assert answers[-1][1].get("connection", "").lower() == "close", (name, answers[-1][1])
        print("ok   %-32s %s%s" % (name, " ".join(str(a[0]) for a in answers), " (closed)" if closed else ""))

    for raw, _ in exchange_all(port, truncated_cases(auth), read_timeout=0.3):
        for status, headers, body in split_responses(raw):
            check_error_format(status, headers, body, "truncated")

    # Mixed malformed traffic: random mutations of real requests (fixed seed, reproducible).
    seeds = [
        b"GET /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + V + auth + b"\r\n",
        b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Content-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"driver\": \"fake-hardware\"}  ",
        b"PATCH /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Content-Length: 51\r\n\r\n[{\"op\":\"add\",\"path\":\"/extra/a\",\"value\":[1,{\"b\":2}]}]",
        b"PUT /v1/nodes/victim/traits HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Transfer-Encoding: chunked\r\n\r\n14\r\n{\"traits\":[\"CUSTOM_\r\n4\r\nA\"]}\r\n0\r\n\r\n",
        b"PUT /v1/nodes/victim/states/provision HTTP/1.1\r\nHost: x\r\n" + V + auth + b"Content-Length: 20\r\n\r\n{\"target\": \"manage\"}",
        b"POST /v1/heartbeat/00000000-0000-0000-0000-000000000000 HTTP/1.1\r\nHost: x\r\n" + V + b"Content-Length: 48\r\n\r\n{\"callback_url\":\"http://x\",\"agent_token\":\"t\"}  ",
        b"GET /v1/lookup?addresses=52:54:00:12:34:56 HTTP/1.1\r\nHost: x\r\n" + V + b"\r\n",
    ]
    rng = random.Random(11)
    mutations = [mutate(rng, seeds) for _ in range(400)]
    for first in range(0, len(mutations), CONCURRENCY):
        batch = mutations[first:first + CONCURRENCY]
        for i, (data, (raw, _)) in enumerate(zip(batch, exchange_all(port, [[d] for d in batch],
                                                                         read_timeout=0.2)),
                                             start=first):
            for status, headers, body in split_responses(raw) if raw.startswith(b"HTTP/1.1 ") else []:
                assert status < 500, "mutation %d: %d %r for %r" % (i, status, body[:200], data[:300])
        # Checked after each batch: the culprit is one of these few.
        assert server.proc.poll() is None, "kiln-server died on mutations %d-%d: %r" % (
            first, first + len(batch) - 1, [d[:300] for d in batch])

    assert server.proc.poll() is None, "kiln-server died"
    after = snapshot(server, auth)
    # The mutations may have done what a valid request asks (a trait, an extra key, manage):
    # what the framing cases must not have done is checked on the fields they target.
    victim_before = [n for n in before["/v1/nodes/detail"]["nodes"] if n["name"] == "victim"]
    victim_after = [n for n in after["/v1/nodes/detail"]["nodes"] if n["name"] == "victim"]
    assert victim_after, "the victim node was deleted"
    assert victim_after[0]["uuid"] == victim_before[0]["uuid"]
    assert victim_after[0]["driver_info"] == victim_before[0]["driver_info"]
    assert after["/v1/deploy_templates?detail=true"] == before["/v1/deploy_templates?detail=true"]
    names = sorted(n["name"] or "" for n in after["/v1/nodes/detail"]["nodes"])
    assert "truncated" not in names, names


def check_framing_leaves_database_unchanged(server, auth):
    """Only framing cases, on a fresh database: nothing at all may change."""
    port = server.port
    status, _ = call(port, "POST", "/v1/nodes", {"driver": "fake-hardware", "name": "victim"}, auth=auth)
    assert status == 201
    before = snapshot(server, auth)
    # "json-patch media type" is a valid (empty) patch: it updates updated_at only.
    exchange_all(port, [segments for name, segments, _ in framing_cases(auth)
                        if name != "json-patch media type"], read_timeout=0.5)
    exchange_all(port, truncated_cases(auth), read_timeout=0.3)
    after = snapshot(server, auth)
    assert after == before, "the database changed"


def check_open_file_limit(binary, workdir):
    """The soft RLIMIT_NOFILE is raised to the hard one at start."""
    wrapper = os.path.join(workdir, "limited-server")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nexec prlimit --nofile=256:4096 -- %s "$@"\n' % binary)
    os.chmod(wrapper, 0o755)
    server = KilnServer(wrapper, workdir, CONFIG % "")
    server.start()
    try:
        with open("/proc/%d/limits" % server.proc.pid) as f:
            line = [l for l in f if l.startswith("Max open files")][0]
        assert line.split()[3] == "4096", line
    finally:
        server.stop()
    with open(server.log_path) as f:
        assert "raised the open-file limit" in f.read()


def check_connection_cap(binary, workdir):
    """Under a 256-descriptor limit (soft = hard), 400 idle connections do not stop the server
    from answering: idle ones are shed, with a log line saying so."""
    wrapper = os.path.join(workdir, "capped-server")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nexec prlimit --nofile=256:256 -- %s "$@"\n' % binary)
    os.chmod(wrapper, 0o755)
    server = KilnServer(wrapper, workdir, CONFIG % "")
    server.start()
    idle = []
    try:
        for _ in range(400):
            try:
                idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
            except OSError:
                break
        status, body = call(server.port, "GET", "/v1/nodes")
        assert status == 200, status
        assert server.proc.poll() is None
    finally:
        for s in idle:
            s.close()
        server.stop()
    with open(server.log_path) as f:
        log = f.read()
    assert "connection limit reached" in log, log[-2000:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    binary = os.path.abspath(args.server)
    logs = []
    try:
        with tempfile.TemporaryDirectory(prefix="kiln-malformed-") as tmp:
            htpasswd = os.path.join(tmp, "htpasswd")
            subprocess.run(["htpasswd", "-cbB", htpasswd, "admin", "pw"], check=True, capture_output=True)
            modes = [("noauth", "", b""),
                     ("http_basic", "auth_strategy = http_basic\nhttp_basic_auth_user_file = %s\n" % htpasswd,
                      b"Authorization: Basic YWRtaW46cHc=\r\n")]
            for mode, extra_config, auth in modes:
                for check in (run_checks, check_framing_leaves_database_unchanged):
                    workdir = tempfile.mkdtemp(dir=tmp)
                    server = KilnServer(binary, workdir, CONFIG % extra_config)
                    logs.append(server.log_path)
                    server.start()
                    try:
                        print("== %s: %s" % (mode, check.__name__))
                        check(server, auth)
                    finally:
                        server.stop()
            for check in (check_open_file_limit, check_connection_cap):
                workdir = tempfile.mkdtemp(dir=tmp)
                logs.append(os.path.join(workdir, "server.log"))
                print("== %s" % check.__name__)
                check(binary, workdir)
            print("malformed HTTP: all checks passed")
    except BaseException:
        print_log_tails(logs)
        raise


if __name__ == "__main__":
    main()
