#!/usr/bin/python3
"""The ipmi hardware type against a real IPMI 2.0 BMC: OpenIPMI's ipmi_sim on 127.0.0.1.

The test starts its own ipmi_sim (a free UDP port, RMCP+ with user "admin"; powering on runs a
script that counts boots and sleeps, powering off ends it) and a kiln-server, enrolls a node
with driver "ipmi" and ipmi_address/ipmi_port/ipmi_username/ipmi_password (ipmi_cipher_suite 3:
ipmi_sim does not answer Get Channel Cipher Suites, which costs ipmitool a second per run), and
checks through the API:

  - manage (verify reads the power state), power on, reboot (one more boot), power off: the
    node's power_state follows, the BMC agrees;
  - the periodic power-state sync, with force_power_state_during_sync = true, powers the machine
    back on after it was powered off behind Kiln's back (ipmitool straight at the BMC); after a
    restart with false, it records a change made behind Kiln's back instead;
  - a wrong password (and no cipher suite, so ipmitool's own argv): the power action fails, and
    last_error, the history, the maintenance reason of the failing sync and the server log carry
    ipmitool's reason and never the password.

Every wait polls the API or the BMC. Exits 77 (skipped) when ipmi_sim (Debian's openipmi) is not
installed.
Usage: ipmi_sim_test.py --server build/server/kiln-server
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from kiln_process import KilnServer, print_log_tails

USER = "admin"
PASSWORD = "Pa55-ipmi-4711"
WRONG_PASSWORD = "Wr0ng-9q7z"
IPMI_REASON = "Unable to establish IPMI v2 / RMCP+ session"


def free_port(kind):
    """A port on 127.0.0.1 free for `kind` (socket.SOCK_DGRAM or SOCK_STREAM) right now."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, check, timeout=20, interval=0.1):
    """Polls `check` until it returns something true; returns that, or fails naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


class IpmiSim:
    """ipmi_sim in its own session (its power-on script's processes too, so that stop() ends
    them all), with a lan.conf and an emu file as docs/environment-notes.md describes."""

    def __init__(self, binary, work):
        self.port = free_port(socket.SOCK_DGRAM)
        self.boots_path = os.path.join(work, "boots")
        self.log_path = os.path.join(work, "ipmi_sim.log")
        state = os.path.join(work, "sim-state")
        os.mkdir(state)
        boot = os.path.join(work, "boot.sh")
        with open(boot, "w") as f:
            # What "the machine" does when powered on: count the boot, then run until killed.
            f.write("#!/bin/sh\necho boot >> %s\nexec sleep 600\n" % self.boots_path)
        os.chmod(boot, 0o755)
        lan = os.path.join(work, "lan.conf")
        with open(lan, "w") as f:
            f.write('name "kiln-test"\n'
                    "set_working_mc 0x20\n"
                    "  startlan 1\n"
                    "    addr 127.0.0.1 %d\n"
                    "    priv_limit admin\n"
                    "    allowed_auths_admin none md2 md5 straight\n"
                    "    guid a123456789abcdefa123456789abcdef\n"
                    "  endlan\n"
                    "  serial 15 127.0.0.1 %d codec VM\n"
                    '  startcmd "%s"\n'
                    "  startnow false\n"
                    "  poweroff_wait 1\n"
                    "  kill_wait 1\n"
                    'user 2 true "%s" "%s" admin 10 none md2 md5 straight\n'
                    % (self.port, free_port(socket.SOCK_STREAM), boot, USER, PASSWORD))
        emu = os.path.join(work, "sim.emu")
        with open(emu, "w") as f:
            f.write("mc_setbmc 0x20\n"
                    "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n"
                    "mc_enable 0x20\n")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([binary, "-c", lan, "-f", emu, "-n", "-s", state],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True, cwd=work)
        wait_until("ipmi_sim to answer", lambda: self._answers(), timeout=15, interval=0.2)

    def _answers(self):
        if self.proc.poll() is not None:
            raise RuntimeError("ipmi_sim exited with %s" % self.proc.returncode)
        return self.ipmitool("chassis", "power", "status", check=False).returncode == 0

    def ipmitool(self, *command, check=True):
        """ipmitool straight at the BMC, as an operator would, behind Kiln's back."""
        env = dict(os.environ, IPMI_PASSWORD=PASSWORD)
        done = subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p",
                               str(self.port), "-U", USER, "-E", "-R", "1", "-N", "1"] + list(command),
                              env=env, capture_output=True, text=True, timeout=30)
        if check:
            assert done.returncode == 0, (command, done.returncode, done.stdout, done.stderr)
        return done

    def power(self):
        out = self.ipmitool("chassis", "power", "status").stdout
        return {"Chassis Power is on\n": "power on", "Chassis Power is off\n": "power off"}[out]

    def boots(self):
        if not os.path.exists(self.boots_path):
            return 0
        with open(self.boots_path) as f:
            return len(f.read().split())

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # The power-on script's sleep is in the simulator's process group.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def server_config(force):
    return ("[DEFAULT]\nenabled_hardware_types = ipmi\n"
            "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 1\n"
            "force_power_state_during_sync = %s\npower_state_sync_max_retries = 2\n"
            "power_state_change_timeout = 15\n"
            "[ipmi]\ncommand_attempts = 2\ncommand_retry_interval = 0\ncommand_timeout = 15\n"
            % ("true" if force else "false"))


def set_power(server, target):
    status, body = server.call("PUT", "/v1/nodes/bmc-node/states/power", {"target": target})
    assert status == 202, (target, status, body)


def power_settled(server):
    """The node once no power action is pending (target_power_state cleared)."""
    return wait_until("the power action to end", lambda: (
        lambda n: n if n["target_power_state"] is None else None)(server.node("bmc-node")))


def power_action(server, target, expected):
    set_power(server, target)
    # The 202 may come before the worker set target_power_state: wait for the action's result
    # (or an error), not only for no action to be pending.
    n = wait_until("the power action to end in %s" % expected, lambda: (
        lambda n: n if n["target_power_state"] is None and (
            n["power_state"] == expected or n["last_error"]) else None)(server.node("bmc-node")))
    assert n["last_error"] is None, (target, n["last_error"])
    assert n["power_state"] == expected, (target, n["power_state"])
    return n


def node_power_becomes(server, state):
    return wait_until("power_state %s" % state,
                      lambda: (lambda n: n if n["power_state"] == state else None)(
                          server.node("bmc-node")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()

    sim_bin = shutil.which("ipmi_sim")
    if not sim_bin:
        print("SKIP: ipmi_sim not installed (Debian package openipmi)")
        sys.exit(77)

    with tempfile.TemporaryDirectory(prefix="kiln-ipmi-sim-") as work:
        sim = None
        server = None
        logs = [os.path.join(work, "server.log"), os.path.join(work, "ipmi_sim.log")]
        try:
            sim = IpmiSim(sim_bin, work)
            assert sim.power() == "power off" and sim.boots() == 0

            # Ironic's default: the sync makes the machine match the recorded power state.
            server = KilnServer(args.server, work, server_config(force=True))
            server.start()
            status, node = server.call("POST", "/v1/nodes", {
                "name": "bmc-node", "driver": "ipmi",
                "driver_info": {"ipmi_address": "127.0.0.1", "ipmi_port": sim.port,
                                "ipmi_username": USER, "ipmi_password": PASSWORD,
                                "ipmi_cipher_suite": 3}})
            assert status == 201, node
            assert node["driver_info"]["ipmi_password"] == "******", node["driver_info"]
            status, validation = server.call("GET", "/v1/nodes/bmc-node/validate")
            assert status == 200 and validation["power"]["result"] is True, validation
            # The sync skips nodes in enroll; verify (manage) reads the power state first.
            server.provision("bmc-node", {"target": "manage"})
            n = server.wait_for("bmc-node", {"manageable", "enroll"}, unlocked=True)
            assert n["provision_state"] == "manageable", n["last_error"]
            assert n["power_state"] == "power off", n

            power_action(server, "power on", "power on")
            assert sim.power() == "power on" and sim.boots() == 1
            power_action(server, "rebooting", "power on")
            # A power cycle: the BMC may report "on" before the machine has started again.
            wait_until("the reboot's boot", lambda: sim.boots() == 2, timeout=10)
            assert sim.power() == "power on"
            print("power on and reboot ok")

            # Powered off behind Kiln's back: the sync powers it on again (a third boot).
            sim.ipmitool("chassis", "power", "off")
            wait_until("the sync to power the node back on", lambda: sim.boots() == 3, timeout=30)
            assert sim.power() == "power on"
            n = server.node("bmc-node")
            assert n["power_state"] == "power on" and n["last_error"] is None, n
            with open(logs[0], errors="replace") as f:
                assert "power state differs from the recorded one; restoring it" in f.read()
            print("sync restored the recorded power state ok")

            power_action(server, "power off", "power off")
            assert sim.power() == "power off"
            print("power off ok")

            # force_power_state_during_sync = false: the sync records what the BMC reports.
            server.stop()
            server = KilnServer(args.server, work, server_config(force=False))
            server.start()
            sim.ipmitool("chassis", "power", "on")
            node_power_becomes(server, "power on")
            assert sim.boots() == 4
            print("sync noticed power on behind Kiln's back ok")

            # A wrong password, and ipmitool's own cipher suite negotiation (no -C).
            status, body = server.call("PATCH", "/v1/nodes/bmc-node", [
                {"op": "replace", "path": "/driver_info/ipmi_password", "value": WRONG_PASSWORD},
                {"op": "remove", "path": "/driver_info/ipmi_cipher_suite"}])
            assert status == 200, body
            set_power(server, "power off")
            n = power_settled(server)
            error = n["last_error"] or ""
            assert error.startswith("Failed to change power state to 'power off': "), error
            assert IPMI_REASON in error and error.endswith("[2 attempts]"), error
            assert "exit code 1" in error, error
            assert n["power_state"] == "power on", n
            assert sim.power() == "power on", "a refused power off changed the machine"
            print("wrong password last_error:", error)

            # The sync fails too: after power_state_sync_max_retries passes, maintenance.
            n = wait_until("the failing sync to set maintenance", lambda: (
                lambda n: n if n["maintenance"] else None)(server.node("bmc-node")), timeout=30)
            assert n["fault"] == "power failure", n
            assert IPMI_REASON in n["maintenance_reason"], n["maintenance_reason"]
            status, history = server.call("GET", "/v1/nodes/bmc-node/history")
            assert status == 200, history
            events = [e["event"] for e in history["history"]]
            assert any(IPMI_REASON in e for e in events), events

            # The wrong password and the right one appear nowhere Kiln shows or writes.
            status, shown = server.call("GET", "/v1/nodes/bmc-node")
            for text, where in ((str(shown), "the node"), (str(history), "the history")):
                for secret in (PASSWORD, WRONG_PASSWORD):
                    assert secret not in text, "%s shows a password" % where
            with open(logs[0], errors="replace") as f:
                text = f.read()
            for secret in (PASSWORD, WRONG_PASSWORD):
                assert secret not in text, "the server log holds a password"
            assert IPMI_REASON in text
            print("wrong password ok: reason shown, password masked")
        except BaseException:
            print_log_tails(logs)
            raise
        finally:
            if server:
                server.stop()
            if sim:
                sim.stop()
    print("ipmi_sim test passed")


if __name__ == "__main__":
    main()
