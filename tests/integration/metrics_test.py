#!/usr/bin/python3
"""GET /metrics of a real kiln-server against Prometheus' own tools (docs/observability.md
"Metrics").

  --check  (ctest metrics_promtool): a scrape after nodes in several states, a redfish node on a
           fake BMC whose sensors the power sync reads, API requests that
           matched a route and did not, a lookup and a heartbeat, passes `promtool check
           metrics` (Prometheus' parser and its lint: names, units, _total, HELP); the alert
           rules of docs/observability.md pass `promtool check rules`.
  default  (ctest integration_prometheus): Debian's prometheus, started here on 127.0.0.1 (a free
           port, a temporary configuration and data directory, a 1 s scrape interval), scrapes
           the kiln-server; its query API then answers kiln_nodes with the fleet the test made.
Exits 77 (skipped) without promtool or prometheus. Usage:
  metrics_test.py --server build/server/kiln-server [--check]
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from kiln_process import KilnServer, print_log_tails, stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77


def scrape(server):
    with urllib.request.urlopen(server.url + "/metrics", timeout=30) as resp:
        assert resp.status == 200, resp.status
        content_type = resp.headers["Content-Type"]
        assert content_type.startswith("text/plain; version=0.0.4"), content_type
        return resp.read().decode()


def make_fleet(server):
    """Five fake-hardware nodes: three enroll, one manageable, one in maintenance. Returns the
    expected kiln_nodes series as {(provision_state, power_state, maintenance): count}."""
    for i in range(5):
        status, body = server.call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": "m%d" % i})
        assert status == 201, body
    server.provision("m3", {"target": "manage"})
    server.wait_for("m3", {"manageable"}, unlocked=True)
    status, body = server.call("PUT", "/v1/nodes/m4/maintenance", {"reason": "metrics test"})
    assert status == 202, body
    expected = {}
    status, body = server.call("GET", "/v1/nodes/detail")
    assert status == 200, body
    for n in body["nodes"]:
        key = (n["provision_state"], n["power_state"] or "none", "true" if n["maintenance"] else "false")
        expected[key] = expected.get(key, 0) + 1
    return expected


class FakeRedfish:
    """A Redfish BMC on loopback for one System with a chassis whose Thermal and Power carry
    sensors (the sensor metrics, docs/observability.md "Sensor metrics"), without
    authentication."""

    RESOURCES = {
        "/redfish/v1": {"Systems": {"@odata.id": "/redfish/v1/Systems"}},
        "/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]},
        "/redfish/v1/Systems/1": {
            "Id": "1", "PowerState": "Off", "Manufacturer": "Kiln", "Model": "Metrics \"Test\"",
            "UUID": "8b3a4b1c-5d6e-4f70-8192-a3b4c5d6e7f8",
            "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1"}]}},
        "/redfish/v1/Chassis/1": {"Id": "1", "Thermal": {"@odata.id": "/redfish/v1/Chassis/1/Thermal"},
                                  "Power": {"@odata.id": "/redfish/v1/Chassis/1/Power"}},
        "/redfish/v1/Chassis/1/Thermal": {
            "Id": "Thermal",
            "Temperatures": [
                {"MemberId": "0", "PhysicalContext": "CPU", "ReadingCelsius": 62.5,
                 "SensorNumber": 1, "Status": {"State": "Enabled", "Health": "OK"}},
                {"MemberId": "1", "PhysicalContext": "Odd Context\n\"x\"", "ReadingCelsius": 20,
                 "Status": {"State": "Enabled", "Health": "Warning"}}],
            "Fans": [{"MemberId": "0", "Reading": 6000, "ReadingUnits": "RPM",
                      "Status": {"State": "Enabled", "Health": "OK"}}]},
        "/redfish/v1/Chassis/1/Power": {
            "Id": "Power",
            "PowerSupplies": [{"MemberId": "0", "PowerCapacityWatts": 800.0,
                               "Status": {"State": "Enabled", "Health": "Critical"}}]},
    }

    def __init__(self):
        import http.server
        import threading
        resources = self.RESOURCES

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = resources.get(self.path.split("?")[0].rstrip("/"))
                data = json.dumps(body if body is not None else {"error": {"message": "no"}}).encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def add_sensor_node(server, bmc):
    """A manageable redfish node on `bmc`; waits until a scrape shows its sensors (the power
    sync reads them every second) and returns that scrape."""
    status, body = server.call("POST", "/v1/nodes", {"driver": "redfish", "name": "rf",
                                                     "driver_info": {"redfish_address": bmc.address}})
    assert status == 201, body
    server.provision("rf", {"target": "manage"})
    server.wait_for("rf", {"manageable"}, unlocked=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = scrape(server)
        if "baremetal_power_status{" in text:
            return text
        time.sleep(0.2)  # poll interval; the deadline above decides
    raise AssertionError("no sensor series after 60 s:\n" + scrape(server))


def alert_rules():
    """The ```yaml block of docs/observability.md that holds the alert rules."""
    with open(os.path.join(ROOT, "docs", "observability.md")) as f:
        text = f.read()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    rules = [b for b in blocks if "groups:" in b and "alert:" in b]
    assert len(rules) == 1, "expected one alert rules block in docs/observability.md"
    return rules[0]


def check(server, workdir):
    promtool = shutil.which("promtool")
    if not promtool:
        print("promtool not installed (Debian package prometheus): skipped")
        return SKIP
    make_fleet(server)
    bmc = FakeRedfish()
    try:
        add_sensor_node(server, bmc)
    finally:
        bmc.stop()
    server.call("GET", "/v1/nodes/m1")
    server.call("GET", "/v1/no/such/path")
    server.call("GET", "/v1/lookup?addresses=52:54:00:00:00:01")
    server.call("POST", "/v1/heartbeat/%s" % server.node("m1")["uuid"], {})
    text = scrape(server)
    for needed in ("kiln_nodes{", "kiln_api_requests_total{", "kiln_heartbeats_total ",
                   "kiln_agent_lookups_total{", "kiln_db_transaction_duration_seconds_bucket{",
                   "kiln_server_info{", "process_start_time_seconds ",
                   "baremetal_temp_cpu_celsius{", "baremetal_temp_odd_context__x__celsius{",
                   "baremetal_fan_status{", "baremetal_temperature_status{"):
        assert needed in text, needed
    res = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    out = res.stdout.decode()
    if res.returncode != 0 or out.strip():
        print("promtool check metrics failed:\n%s\n---- scrape ----\n%s" % (out, text))
        return 1
    rules = os.path.join(workdir, "kiln-alerts.yml")
    with open(rules, "w") as f:
        f.write(alert_rules())
    res = subprocess.run([promtool, "check", "rules", rules], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=60)
    if res.returncode != 0:
        print("promtool check rules failed:\n%s" % res.stdout.decode())
        return 1
    print("promtool: scrape and alert rules clean")
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.loads(resp.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def with_prometheus(server, workdir):
    binary = shutil.which("prometheus")
    if not binary:
        print("prometheus not installed (Debian package prometheus): skipped")
        return SKIP
    expected = make_fleet(server)
    port = free_port()
    config = os.path.join(workdir, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: kiln\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % server.port)
    log_path = os.path.join(workdir, "prometheus.log")
    log = open(log_path, "ab")
    proc = subprocess.Popen([binary, "--config.file=" + config,
                             "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 90
        got = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                print_log_tails([log_path])
                print("prometheus exited with %s" % proc.returncode)
                return 1
            try:
                result = query(port, "kiln_nodes")
            except OSError:
                result = None  # not listening yet
            if result:
                got = {}
                for r in result:
                    m = r["metric"]
                    assert m["job"] == "kiln" and m["instance"] == "127.0.0.1:%d" % server.port, m
                    key = (m["provision_state"], m["power_state"], m["maintenance"])
                    got[key] = int(float(r["value"][1]))
                if got == expected:
                    break
            time.sleep(0.2)  # poll interval; the deadline above decides
        if got != expected:
            print_log_tails([log_path])
            print("kiln_nodes in Prometheus: %s\nexpected: %s" % (got, expected))
            return 1
        info = query(port, "kiln_server_info")
        assert len(info) == 1 and info[0]["metric"]["host"] == "metrics-test", info
        up = query(port, 'up{job="kiln"}')
        assert up and up[0]["value"][1] == "1", up
        print("prometheus read back kiln_nodes: %s" % got)
        return 0
    finally:
        stop_process(proc)
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--check", action="store_true", help="promtool on a scrape and the alert rules")
    args = ap.parse_args()
    if args.check and not shutil.which("promtool") or not args.check and not shutil.which("prometheus"):
        print("Debian's prometheus package is not installed: skipped")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="kiln-metrics-") as workdir:
        # --check: a redfish node's sensor series too ([sensor_data], a power sync every second).
        config = ("[DEFAULT]\nenabled_hardware_types = fake-hardware%s\nhost = metrics-test\n"
                  "[conductor]\nsync_power_state_interval = %d\n"
                  % (",redfish" if args.check else "", 1 if args.check else 0))
        if args.check:
            config += "[sensor_data]\nsend_sensor_data = true\nenable_for_undeployed_nodes = true\n"
        server = KilnServer(args.server, workdir, config)
        try:
            server.start()
            return check(server, workdir) if args.check else with_prometheus(server, workdir)
        except BaseException:
            print_log_tails([server.log_path])
            raise
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
