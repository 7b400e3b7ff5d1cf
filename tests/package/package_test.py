#!/usr/bin/python3
"""The Debian packages (scripts/package.sh, scripts/debian/; docs/operations.md), end to end:

  1. builds kiln-server and kiln-agent-ramdisk from this build tree and ramdisk twice: the two
     builds give the same bytes;
  2. lintian finds no error in them;
  3. installs both into a fresh Debian 12 root made by debootstrap (minbase), with apt pulling
     every dependency from Debian's archive;
  4. checks the kiln system user, the conffile /etc/kiln/kiln.conf (root:kiln 0640), the
     directories the package gives to kiln, the agent images, and the unit with
     `systemd-analyze verify` (alone and with the managed-dnsmasq drop-in);
  5. starts the unit's ExecStart in that root as kiln (chroot and setpriv with the unit's
     settings: no new privileges, no capability; its own network namespace; no systemd runs
     here), from /etc/kiln/kiln.conf, and talks to its API: version document, a node created
     and validated (its boot interface finds the packaged agent images), the web console, the
     metrics; then with [dnsmasq] manage = true on a veth: without the managed-dnsmasq drop-in
     dnsmasq cannot bind the DHCP port, with its capabilities dnsmasq serves DHCP and TFTP as
     the kiln user;
  6. turns the database into one of the previous schema (tests/integration/
     upgrade_database_test.py) and reinstalls the package: the postinst's
     `kiln-server --upgrade-database` migrates it and the node is still there;
  7. purges both packages: nothing of theirs is left (/etc/kiln, /var/lib/kiln, /var/log/kiln,
     /usr/share/kiln, the unit).

Needs root (debootstrap, chroot), debootstrap, lintian, debhelper, systemd-analyze and apt access
to Debian's archive (the host's apt sources are copied into the root). Exits 77 (skipped) when
not root. Everything it makes is under --work-dir and deleted at the end; mounts (proc in the
root) live in a private mount namespace of its own and die with it.

Usage: package_test.py --build-dir BUILD --ramdisk-dir RAMDISK --work-dir DIR
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import e2e_checks  # noqa: E402
from upgrade_database_test import NEWEST, has_events_table, sql, to_previous_schema, version  # noqa: E402

SUITE = "bookworm"
UNIT = "kiln-server.service"
API_VERSION = "1.115"
BMC_PASSWORD = "pkg-bmc-Pa55-7f3e"
# What an operator sets after installing: the URL agents reach kiln-server at (site-specific,
# so the package leaves it commented out).
API_URL_LINE = "api_url = http://192.0.2.1:6385"


def log(message):
    print("package_test: " + message, flush=True)


def run(argv, timeout=1200, check=True, **kwargs):
    log("$ " + " ".join(argv))
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, **kwargs)
    if check and done.returncode != 0:
        print(done.stdout[-6000:])
        raise AssertionError("%s exited with %d" % (argv[0], done.returncode))
    return done


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def build_packages(args, out):
    run([os.path.join(REPO, "scripts", "package.sh"), "--build-dir", args.build_dir,
         "--ramdisk-dir", args.ramdisk_dir, out])
    debs = sorted(glob.glob(os.path.join(out, "*.deb")))
    names = [os.path.basename(d).split("_")[0] for d in debs]
    assert names == ["kiln-agent-ramdisk", "kiln-server"], debs
    assert debs[0].endswith("_all.deb") and debs[1].endswith("_amd64.deb"), debs
    return debs


def deb_field(deb, field):
    return run(["dpkg-deb", "-f", deb, field]).stdout.strip()


def check_contents(server_deb, ramdisk_deb):
    listing = run(["dpkg-deb", "-c", server_deb]).stdout
    for path in ("./usr/bin/kiln-server", "./etc/kiln/kiln.conf", "./lib/systemd/system/kiln-server.service",
                 "./usr/share/kiln/console/index.html", "./usr/share/kiln/systemd/managed-dnsmasq.conf",
                 "./usr/share/man/man8/kiln-server.8.gz", "./usr/share/doc/kiln-server/copyright"):
        assert (" " + path + "\n") in listing or (" " + path + " ") in listing, (path, listing)
    depends = deb_field(server_deb, "Depends")
    # ${shlibs:Depends}: the libraries kiln-server links, as Debian's packages name them.
    for lib in ("libsqlite3-0", "libpq5", "libssl3", "libpistache", "libstdc++6", "adduser"):
        assert lib in depends, (lib, depends)
    conffiles = run(["dpkg-deb", "-I", server_deb, "conffiles"]).stdout.split()
    assert conffiles == ["/etc/kiln/kiln.conf"], conffiles
    listing = run(["dpkg-deb", "-c", ramdisk_deb]).stdout
    for name in ("kiln-agent.kernel", "kiln-agent.initramfs", "kiln-agent.manifest"):
        assert "./usr/share/kiln/agent/" + name in listing, (name, listing)


class Root:
    """A Debian root made by debootstrap, used through chroot."""

    def __init__(self, path):
        self.path = path

    def file(self, path):
        return os.path.join(self.path, path.lstrip("/"))

    def chroot(self, argv, **kwargs):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive",
               "LC_ALL": "C.UTF-8", "HOME": "/root"}
        return run(["chroot", self.path] + argv, env=env, **kwargs)

    def make(self):
        # The host's apt sources (Debian's archive, as configured on this machine), so that
        # debootstrap and apt in the root reach the same archive.
        mirror = None
        for sources in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
            with open(sources) as f:
                uris = [line.split()[1] for line in f if line.startswith("URIs:") and "security" not in line]
            mirror = mirror or (uris[0] if uris else None)
        mirror = mirror or "http://deb.debian.org/debian"
        run(["debootstrap", "--variant=minbase", "--cache-dir=/var/cache/apt/archives", SUITE,
             self.path, mirror], timeout=1800)
        for src in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.sources") \
                + glob.glob("/etc/apt/sources.list.d/*.list"):
            if os.path.isfile(src):
                shutil.copy(src, self.file(src))
        for src in glob.glob("/etc/apt/apt.conf.d/*"):
            dst = self.file(src)
            if os.path.isfile(src) and not os.path.exists(dst):
                shutil.copy(src, dst)
        os.makedirs(self.file("/proc"), exist_ok=True)
        run(["mount", "-t", "proc", "proc", self.file("/proc")])
        self.chroot(["apt-get", "update", "-q"], timeout=600)

    def unmount(self):
        subprocess.run(["umount", "-l", self.file("/proc")], stderr=subprocess.DEVNULL)

    def user(self, name):
        with open(self.file("/etc/passwd")) as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                if fields[0] == name:
                    return fields
        return None


def unit_settings(root):
    settings = {}
    with open(root.file("/lib/systemd/system/" + UNIT)) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                settings.setdefault(key, []).append(value)
    return settings


def check_installed(root, ramdisk_dir):
    kiln = root.user("kiln")
    assert kiln is not None, "no kiln user"
    assert int(kiln[2]) < 1000 and kiln[5] == "/var/lib/kiln" and kiln[6] == "/usr/sbin/nologin", kiln
    conf = os.stat(root.file("/etc/kiln/kiln.conf"))
    assert (conf.st_uid, conf.st_gid, conf.st_mode & 0o777) == (0, int(kiln[3]), 0o640), conf
    for d in ("/var/lib/kiln", "/var/log/kiln"):
        st = os.stat(root.file(d))
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (int(kiln[2]), int(kiln[3]), 0o750), (d, st)
    status = root.chroot(["dpkg-query", "-W", "-f=${Status} ${Conffiles}", "kiln-server"]).stdout
    assert status.startswith("install ok installed") and "/etc/kiln/kiln.conf" in status, status
    with open(root.file("/etc/kiln/kiln.conf")) as f:
        text = f.read()
    assert "connection = sqlite:////var/lib/kiln/kiln.sqlite\n" in text, text
    assert "deploy_kernel = /usr/share/kiln/agent/kiln-agent.kernel\n" in text, text
    for name in ("kiln-agent.kernel", "kiln-agent.initramfs", "kiln-agent.manifest"):
        assert sha256(root.file("/usr/share/kiln/agent/" + name)) == sha256(os.path.join(ramdisk_dir, name)), name

    settings = unit_settings(root)
    for key, value in (("User", "kiln"), ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                       ("ProtectHome", "yes"), ("PrivateTmp", "yes"), ("Restart", "on-failure"),
                       ("StateDirectory", "kiln"), ("LogsDirectory", "kiln"), ("CapabilityBoundingSet", "")):
        assert settings.get(key) == [value], (key, settings.get(key))
    # --man=no: systemd-analyze looks Documentation's man page up on the host, not in the root;
    # the page is checked in the root instead.
    assert os.path.isfile(root.file("/usr/share/man/man8/kiln-server.8.gz"))
    verify = ["systemd-analyze", "verify", "--man=no", "--root=" + root.path, UNIT]
    done = run(verify, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout
    dropin_dir = root.file("/etc/systemd/system/kiln-server.service.d")
    os.makedirs(dropin_dir)
    os.symlink("/usr/share/kiln/systemd/managed-dnsmasq.conf", os.path.join(dropin_dir, "managed-dnsmasq.conf"))
    try:
        done = run(verify, check=False)
        assert done.returncode == 0 and done.stdout.strip() == "", done.stdout
    finally:
        shutil.rmtree(dropin_dir)


# --- The server in the root (run inside `unshare --net`, see serve()) -----------------------

def call(method, path, body=None, port=6385):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method,
                                 headers={"X-OpenStack-Ironic-API-Version": API_VERSION,
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def capabilities(root, dropin):
    """The capabilities a drop-in's AmbientCapabilities= grants, as setpriv names them."""
    caps = []
    with open(root.file(dropin)) as f:
        for line in f:
            if line.startswith("AmbientCapabilities="):
                caps += [c.lower().removeprefix("cap_") for c in line.split("=", 1)[1].split()]
    assert caps, "no AmbientCapabilities in " + dropin
    return caps


def start_server(root, logname, caps=()):
    """The unit's ExecStart in the root as its User, in its WorkingDirectory, as the unit's
    settings would run it: no new privileges, no capability but `caps` (a drop-in's)."""
    settings = unit_settings(root)
    user = settings["User"][0]
    command = "cd %s && exec %s" % (settings["WorkingDirectory"][0], settings["ExecStart"][0])
    setpriv = ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--no-new-privs",
               "--bounding-set=-all" + "".join(",+" + c for c in caps)]
    if caps:
        setpriv += ["--inh-caps=" + ",".join("+" + c for c in caps),
                    "--ambient-caps=" + ",".join("+" + c for c in caps)]
    logfile = open(os.path.join(os.path.dirname(root.path), logname), "w")
    return subprocess.Popen(["chroot", root.path] + setpriv + ["/bin/sh", "-c", command],
                            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"},
                            stdout=logfile, stderr=subprocess.STDOUT)


def wait_until(predicate, what, server, timeout=60):
    """e2e_checks.wait_until, failing at once when kiln-server exits."""
    def check():
        assert server.poll() is None, "kiln-server exited with %s while waiting for %s" % (server.returncode, what)
        return predicate()
    return e2e_checks.wait_until(what, check, timeout)


def answers():
    try:
        return call("GET", "/")
    except (urllib.error.URLError, ConnectionError):
        return None


def stop(server):
    server.send_signal(signal.SIGTERM)
    return server.wait(timeout=60)


def serve_phase(root_path):
    """In a network namespace of its own: brings lo up, starts kiln-server in the root as the
    unit would, checks the API, stops it with SIGTERM; then runs it with a managed dnsmasq on a
    veth of this namespace, without and with the managed-dnsmasq drop-in's capabilities.
    Prints the results as one JSON line."""
    root = Root(root_path)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    results = {}
    server = start_server(root, "kiln-server.log")
    try:
        status, body = wait_until(answers, "the API", server)
        assert status == 200 and json.loads(body)["default_version"]["id"] == "v1", (status, body)
        status, body = call("POST", "/v1/nodes", {"name": "pkg-node", "driver": "ipmi",
                                                  "boot_interface": "pxe",
                                                  "driver_info": {"ipmi_address": "192.0.2.10",
                                                                  "ipmi_username": "admin",
                                                                  "ipmi_password": BMC_PASSWORD}})
        assert status == 201, (status, body)
        status, body = call("POST", "/v1/ports", {"node_uuid": json.loads(body)["uuid"],
                                                  "address": "52:54:00:12:34:56"})
        assert status == 201, (status, body)
        status, body = call("GET", "/v1/nodes/pkg-node/validate")
        assert status == 200, (status, body)
        results["validate"] = json.loads(body)
        status, body = call("GET", "/ui/")
        assert status == 200 and b"<html" in body.lower(), (status, body[:200])
        status, body = call("GET", "/metrics")
        assert status == 200 and b"kiln_" in body, (status, body[:200])
    finally:
        results["exit"] = stop(server)

    # [dnsmasq] manage = true on a veth of this namespace.
    subprocess.run(["ip", "link", "add", "kp0", "type", "veth", "peer", "name", "kp1"], check=True)
    subprocess.run(["ip", "addr", "add", "192.0.2.1/24", "dev", "kp0"], check=True)
    for dev in ("kp0", "kp1"):
        subprocess.run(["ip", "link", "set", dev, "up"], check=True)
    conf = root.file("/etc/kiln/kiln.conf")
    with open(conf) as f:
        original = f.read()
    with open(conf, "a") as f:
        f.write("\n[dhcp]\ndhcp_provider = dnsmasq\n[dnsmasq]\nmanage = true\ninterface = kp0\n"
                "dhcp_range = 192.0.2.100,192.0.2.200,12h\n")
    log_path = os.path.join(os.path.dirname(root.path), "kiln-server-dnsmasq.log")

    def log_has(text):
        with open(log_path) as f:
            return text in f.read()
    try:
        # The unit alone: dnsmasq, as kiln without capabilities, cannot bind the DHCP port.
        server = start_server(root, os.path.basename(log_path))
        try:
            wait_until(lambda: log_has("failed to bind DHCP server socket: Permission denied"), "dnsmasq's refusal", server)
        finally:
            results["exit_without_capabilities"] = stop(server)
        # With the drop-in: dnsmasq, a child of kiln-server running as kiln, serves DHCP and TFTP.
        caps = capabilities(root, "/usr/share/kiln/systemd/managed-dnsmasq.conf")
        server = start_server(root, os.path.basename(log_path), caps)
        try:
            wait_until(answers, "the API", server)

            def dnsmasq_ports():
                out = subprocess.run(["ss", "-Hlunp"], stdout=subprocess.PIPE, text=True).stdout
                lines = [line for line in out.splitlines() if "dnsmasq" in line]
                ports = {line.split()[3].rsplit(":", 1)[1] for line in lines}
                return lines if {"67", "69"} <= ports else None
            lines = wait_until(dnsmasq_ports, "dnsmasq on ports 67 and 69", server)
            pid = int(lines[0].split("pid=")[1].split(",")[0])
            with open("/proc/%d/status" % pid) as f:
                uid = [line.split()[1] for line in f if line.startswith("Uid:")][0]
            results["dnsmasq_uid"] = int(uid)
        finally:
            results["exit_with_capabilities"] = stop(server)
    finally:
        with open(conf, "w") as f:
            f.write(original)
    print(json.dumps(results))


def serve(root):
    done = run(["unshare", "--net", sys.executable, os.path.abspath(__file__), "--serve-phase", root.path],
               check=False, timeout=300)
    server_log = ""
    for name in ("kiln-server.log", "kiln-server-dnsmasq.log"):
        path = os.path.join(os.path.dirname(root.path), name)
        if os.path.exists(path):
            with open(path) as f:
                server_log += "---- %s ----\n%s" % (name, f.read())
    if done.returncode != 0:
        print(done.stdout)
        print(server_log[-8000:])
        raise AssertionError("the server phase failed")
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results["exit"] == 0, (results, server_log[-3000:])
    assert results["exit_without_capabilities"] == 0 and results["exit_with_capabilities"] == 0, results
    assert results["dnsmasq_uid"] == int(root.user("kiln")[2]), results
    # The pxe boot interface found the agent images of kiln-agent-ramdisk through kiln.conf
    # (allowed by its file_url_allowed_paths) and a tftp_root the kiln user can write.
    validate = results["validate"]
    assert validate["boot"]["result"] is True, validate["boot"]
    assert BMC_PASSWORD not in server_log, "the BMC password is in the log"
    return server_log


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir")
    parser.add_argument("--ramdisk-dir")
    parser.add_argument("--work-dir")
    parser.add_argument("--serve-phase")
    args = parser.parse_args()
    if args.serve_phase:
        serve_phase(args.serve_phase)
        return 0
    if os.geteuid() != 0:
        print("SKIP: needs root (debootstrap, chroot)")
        return 77
    if os.environ.get("KILN_PACKAGE_TEST_NS") != "1":
        # A private mount namespace: the root's /proc mount goes away with this process.
        os.environ["KILN_PACKAGE_TEST_NS"] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable]
                  + [os.path.abspath(__file__)] + sys.argv[1:])

    work = os.path.abspath(args.work_dir)
    if os.path.exists(work):
        subprocess.run(["rm", "-rf", "--one-file-system", work], check=True)
    os.makedirs(work)
    root = Root(os.path.join(work, "root"))
    try:
        started = time.monotonic()
        first = build_packages(args, os.path.join(work, "out1"))
        second = build_packages(args, os.path.join(work, "out2"))
        for a, b in zip(first, second):
            assert os.path.basename(a) == os.path.basename(b) and sha256(a) == sha256(b), \
                "two builds differ: %s %s" % (a, b)
        log("two builds, same bytes: %s (%.0f s)" % (", ".join(os.path.basename(d) for d in first),
                                                     time.monotonic() - started))
        ramdisk_deb, server_deb = first
        check_contents(server_deb, ramdisk_deb)

        changes = glob.glob(os.path.join(work, "out1", "*.changes"))
        assert len(changes) == 1, changes
        lint = run(["lintian", "--fail-on", "error", "--tag-display-limit", "0", changes[0]], check=False)
        print(lint.stdout)
        assert lint.returncode == 0, "lintian found errors"

        root.make()
        for deb in first:
            shutil.copy(deb, root.file("/tmp/"))
        debs = ["/tmp/" + os.path.basename(d) for d in first]
        # systemd as on any Debian server (minbase has none; systemd-analyze verify needs its
        # units); everything else is what the packages depend on and recommend.
        root.chroot(["apt-get", "install", "-y", "-q", "systemd"] + debs, timeout=900)
        check_installed(root, args.ramdisk_dir)
        conf = root.file("/etc/kiln/kiln.conf")
        with open(conf) as f:
            text = f.read()
        assert text.count("\n#api_url =\n") == 1, "no '#api_url =' line in kiln.conf"
        with open(conf, "w") as f:
            f.write(text.replace("\n#api_url =\n", "\n" + API_URL_LINE + "\n"))

        serve(root)

        db = root.file("/var/lib/kiln/kiln.sqlite")
        to_previous_schema(db)
        kiln = root.user("kiln")
        for path in glob.glob(db + "*"):  # this test's sqlite3 ran as root
            os.chown(path, int(kiln[2]), int(kiln[3]))
        reinstall = root.chroot(["dpkg", "-i", "/tmp/" + os.path.basename(server_deb)], timeout=300)
        assert "database upgraded" in reinstall.stdout and "schema_version=%d" % NEWEST in reinstall.stdout, \
            reinstall.stdout
        assert version(db) == NEWEST and has_events_table(db)
        assert [r[0] for r in sql(db, "SELECT name FROM nodes")] == ["pkg-node"]
        st = os.stat(db)
        assert st.st_uid == int(root.user("kiln")[2]), "the upgrade left the database to another user"

        root.chroot(["apt-get", "purge", "-y", "-q", "kiln-server", "kiln-agent-ramdisk"], timeout=300)
        for path in ("/etc/kiln", "/var/lib/kiln", "/var/log/kiln", "/usr/share/kiln", "/usr/bin/kiln-server",
                     "/lib/systemd/system/" + UNIT, "/usr/share/doc/kiln-server"):
            assert not os.path.lexists(root.file(path)), path + " is left after the purge"
        left = root.chroot(["dpkg-query", "-W", "-f=${db:Status-Abbrev}\n", "kiln-server", "kiln-agent-ramdisk"],
                           check=False).stdout
        assert "ii" not in left and "rc" not in left, left
        log("PASS (%.0f s)" % (time.monotonic() - started))
    finally:
        root.unmount()
        subprocess.run(["rm", "-rf", "--one-file-system", work])
    return 0


if __name__ == "__main__":
    sys.exit(main())
