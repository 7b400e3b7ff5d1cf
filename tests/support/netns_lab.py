"""A throw-away provisioning network for tests: Linux network namespaces, a bridge, taps, veths.

Python 3 standard library only; every change is made with `ip` inside namespaces this module
creates, so the host's own interfaces, addresses and routes are never touched. Needs root (or
CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2 and the kernel's bridge, tun and veth support; ask
available() first and skip (exit 77) when it says no.

    import netns_lab
    ok, why = netns_lab.available()
    if not ok:
        print("SKIP: " + why); sys.exit(77)
    with netns_lab.Lab(taps=1, clients=1) as lab:
        lab.ns                  # "kiln-<pid>-<n>": the lab namespace
        lab.bridge              # "br0" in it, 192.0.2.1/24, up; lo up
        lab.taps                # ["tap0"]: persistent taps in lab.ns, on br0, up (for QEMU:
                                #   -netdev tap,id=n0,ifname=tap0,script=no,downscript=no)
        c = lab.clients[0]      # c.ns "kiln-<pid>-<n>-c0", c.ifname "eth0" (a veth whose peer
                                #   "vc0" is on br0), c.mac; no address unless given one
        lab.run(["dnsmasq", "--test"])              # subprocess.run inside lab.ns
        p = lab.popen(["dnsmasq", ...])             # Popen inside lab.ns (ended at close)
        lab.run(["udhcpc", "-i", "eth0", ...], ns=c.ns)
        lab.wrap(["qemu-system-x86_64", ...])       # ["ip", "netns", "exec", lab.ns, ...]
    # every process left in the namespaces is killed and the namespaces are deleted (which
    # deletes their bridge, taps and veths), also when the block raised or was interrupted.

Clean-up paths: close() (the with block's end, an exception, KeyboardInterrupt), atexit, and
SIGTERM/SIGHUP (turned into SystemExit while a Lab is open, when the program had the default
handler). A test killed with SIGKILL cannot clean up: the next Lab (and reap_stale()) deletes
namespaces named kiln-<pid>-... whose <pid> no longer runs. Processes started with popen() get
PR_SET_PDEATHSIG=SIGKILL, so they die with the test even then.

Addresses come from 192.0.2.0/24 (TEST-NET-1) by default; 198.51.100.0/24 and 203.0.113.0/24
are the other documentation ranges a lab may use.
"""
import atexit
import ctypes
import ipaddress
import itertools
import os
import re
import shutil
import signal
import subprocess
import threading
import time

PREFIX = "kiln"
NETNS_DIR = "/run/netns"
ALLOWED_NETS = [ipaddress.ip_network(n) for n in
                ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
PR_SET_PDEATHSIG = 1

_counter = itertools.count()
_open_labs = []
_lock = threading.Lock()
_available = None


class LabError(RuntimeError):
    """An `ip` command failed (its command line and output are in the message)."""


def _ip(*args, check=True):
    """Runs `ip ARGS`; returns CompletedProcess. Every call in this module names a namespace
    (`ip -n NS ...`, `ip netns add|del NS`), so nothing here changes the host's own network."""
    proc = subprocess.run(["ip"] + list(args), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=30)
    if check and proc.returncode != 0:
        raise LabError("ip %s: exit %d: %s" % (" ".join(args), proc.returncode,
                                               (proc.stderr or proc.stdout).strip()))
    return proc


def _pdeathsig():
    """In a child before exec: SIGKILL when the thread that started it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; close() still ends it
        pass


def list_namespaces():
    """Names of the existing named network namespaces (`ip netns list`)."""
    proc = _ip("netns", "list", check=False)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_namespace_processes(ns, grace=3.0):
    """SIGTERM, then SIGKILL, to every process inside network namespace `ns` (they were all
    started there by the lab's owner: the namespace's name is unique to it)."""
    def pids():
        proc = _ip("netns", "pids", ns, check=False)
        return [int(p) for p in proc.stdout.split() if p.isdigit() and int(p) != os.getpid()]

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        left = pids()
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_pid_alive(p) for p in left):
            time.sleep(0.05)
            # Reap our own children so they do not linger as zombies (still "in" the netns).
            for p in left:
                try:
                    os.waitpid(p, os.WNOHANG)
                except ChildProcessError:
                    pass


def _delete_namespace(ns):
    _kill_namespace_processes(ns)
    _ip("netns", "del", ns, check=False)


def reap_stale(prefix=PREFIX):
    """Deletes namespaces named <prefix>-<pid>-... whose <pid> is no longer running (left by a
    test that was killed with SIGKILL). Returns the names deleted."""
    gone = []
    pattern = re.compile(r"^%s-(\d+)-\d+(-c\d+)?$" % re.escape(prefix))
    for ns in list_namespaces():
        m = pattern.match(ns)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            _delete_namespace(ns)
            gone.append(ns)
    return gone


def available():
    """(True, "") when this process can build a lab, else (False, why). Tries it for real once
    (a namespace with a bridge, a tap and a veth pair, deleted again) and caches the answer."""
    global _available
    if _available is not None:
        return _available
    if os.geteuid() != 0:
        _available = (False, "network namespaces need root (CAP_NET_ADMIN, CAP_SYS_ADMIN)")
        return _available
    if shutil.which("ip") is None:
        _available = (False, "`ip` is not installed (Debian package iproute2)")
        return _available
    if not os.path.exists("/dev/net/tun"):
        _available = (False, "/dev/net/tun is missing (no tun/tap support)")
        return _available
    ns = "%s-%d-probe%d" % (PREFIX, os.getpid(), next(_counter))
    try:
        _ip("netns", "add", ns)
        try:
            _ip("-n", ns, "link", "add", "br0", "type", "bridge")
            _ip("-n", ns, "tuntap", "add", "dev", "tap0", "mode", "tap")
            _ip("-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
        finally:
            _ip("netns", "del", ns, check=False)
        _available = (True, "")
    except (LabError, OSError, subprocess.SubprocessError) as e:
        _available = (False, "cannot build a network namespace lab here: %s" % e)
    return _available


class Client:
    """A namespace of its own joined to the lab's bridge through a veth pair."""

    def __init__(self, ns, ifname, peer, mac, address):
        self.ns = ns            # the client's namespace
        self.ifname = ifname    # its end of the veth, inside ns ("eth0")
        self.peer = peer        # the other end, on the lab's bridge
        self.mac = mac
        self.address = address  # "192.0.2.x/24" or None

    def __repr__(self):
        return "Client(ns=%r, ifname=%r, mac=%r, address=%r)" % (self.ns, self.ifname, self.mac,
                                                                self.address)


class Lab:
    """The lab: see the module's documentation. Use it as a context manager (or call close())."""

    def __init__(self, taps=0, clients=0, bridge_address="192.0.2.1/24", bridge="br0",
                 prefix=PREFIX):
        iface = ipaddress.ip_interface(bridge_address)
        if not any(iface.ip in net for net in ALLOWED_NETS):
            raise ValueError("bridge address %s is outside the documentation ranges %s" % (
                bridge_address, ", ".join(map(str, ALLOWED_NETS))))
        if not IFNAME_RE.match(bridge):
            raise ValueError("bad bridge name %r" % bridge)
        self.prefix = prefix
        self.ns = "%s-%d-%d" % (prefix, os.getpid(), next(_counter))
        self.bridge = bridge
        self.bridge_address = str(iface)
        self.address = str(iface.ip)          # "192.0.2.1"
        self.network = iface.network          # 192.0.2.0/24
        self.taps = []
        self.clients = []
        self._namespaces = []                 # created, in order
        self._procs = []
        self._n_taps = taps
        self._n_clients = clients
        self._closed = False

    # -- life cycle -----------------------------------------------------------------------

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def open(self):
        reap_stale(self.prefix)
        with _lock:
            _open_labs.append(self)
            if len(_open_labs) == 1:
                _install_signal_handlers()
        try:
            _ip("netns", "add", self.ns)
            self._namespaces.append(self.ns)
            self._ipn("link", "set", "lo", "up")
            self._ipn("link", "add", self.bridge, "type", "bridge", "stp_state", "0",
                      "forward_delay", "0")
            self._ipn("addr", "add", self.bridge_address, "dev", self.bridge)
            self._ipn("link", "set", self.bridge, "up")
            for _ in range(self._n_taps):
                self.add_tap()
            for _ in range(self._n_clients):
                self.add_client()
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        """Ends every process started in the lab's namespaces and deletes them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for proc in self._procs:
            if proc.poll() is None:
                try:
                    proc.terminate()
                    proc.wait(3)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                except OSError:
                    pass
        for ns in reversed(self._namespaces):
            _delete_namespace(ns)
        with _lock:
            if self in _open_labs:
                _open_labs.remove(self)
            if not _open_labs:
                _restore_signal_handlers()

    # -- devices --------------------------------------------------------------------------

    def _ipn(self, *args, ns=None):
        return _ip("-n", ns or self.ns, *args)

    def add_tap(self, name=None):
        """A persistent tap in the lab namespace, on the bridge, up; returns its name. QEMU,
        run inside the namespace, opens it with -netdev tap,ifname=NAME,script=no,downscript=no
        (until then its carrier is down: the bridge forwards once QEMU has it open)."""
        name = name or "tap%d" % len(self.taps)
        if not IFNAME_RE.match(name):
            raise ValueError("bad tap name %r" % name)
        self._ipn("tuntap", "add", "dev", name, "mode", "tap")
        self._ipn("link", "set", name, "master", self.bridge)
        self._ipn("link", "set", name, "up")
        self.taps.append(name)
        return name

    def add_client(self, mac=None, address=None):
        """A client namespace <lab>-c<i> whose eth0 is a veth to the bridge (peer vc<i>), lo and
        eth0 up; `address` ("192.0.2.x/24") only when given (a DHCP client brings its own)."""
        i = len(self.clients)
        ns, peer = "%s-c%d" % (self.ns, i), "vc%d" % i
        if mac is not None and not MAC_RE.match(mac.lower()):
            raise ValueError("bad MAC %r" % mac)
        if address is not None:
            iface = ipaddress.ip_interface(address)
            if iface.ip not in self.network:
                raise ValueError("client address %s is outside %s" % (address, self.network))
        _ip("netns", "add", ns)
        self._namespaces.append(ns)
        self._ipn("link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", ns)
        self._ipn("link", "set", peer, "master", self.bridge)
        self._ipn("link", "set", peer, "up")
        self._ipn("link", "set", "lo", "up", ns=ns)
        if mac is not None:
            self._ipn("link", "set", "eth0", "address", mac.lower(), ns=ns)
        if address is not None:
            self._ipn("addr", "add", address, "dev", "eth0", ns=ns)
        self._ipn("link", "set", "eth0", "up", ns=ns)
        out = self._ipn("-o", "link", "show", "eth0", ns=ns).stdout
        m = re.search(r"link/ether ([0-9a-f:]{17})", out)
        client = Client(ns, "eth0", peer, m.group(1) if m else mac, address)
        self.clients.append(client)
        return client

    def link(self, name, ns=None):
        """`ip -o link show NAME` in the namespace (for checks)."""
        return self._ipn("-o", "link", "show", name, ns=ns).stdout

    # -- processes ------------------------------------------------------------------------

    def wrap(self, args, ns=None):
        """The command line that runs `args` inside the namespace (default: the lab's)."""
        return ["ip", "netns", "exec", ns or self.ns] + list(args)

    def run(self, args, ns=None, **kwargs):
        """subprocess.run inside the namespace (default timeout 60 s)."""
        kwargs.setdefault("timeout", 60)
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(self.wrap(args, ns), **kwargs)

    def popen(self, args, ns=None, **kwargs):
        """subprocess.Popen inside the namespace. The process gets PR_SET_PDEATHSIG=SIGKILL and
        is ended (SIGTERM, then SIGKILL) at close() if still running."""
        if self._closed:
            raise LabError("the lab is closed")
        user_preexec = kwargs.pop("preexec_fn", None)

        def preexec():
            _pdeathsig()
            if user_preexec:
                user_preexec()

        kwargs.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(self.wrap(args, ns), preexec_fn=preexec, **kwargs)
        self._procs.append(proc)
        return proc


# -- clean-up when the program ends other than through close() -------------------------------

def _close_all():
    for lab in list(_open_labs):
        try:
            lab.close()
        except Exception:  # noqa: BLE001 - keep closing the others
            pass


atexit.register(_close_all)


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds the with blocks (close()), then atexit


def _install_signal_handlers():
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) == signal.SIG_DFL:
                Lab._saved_handlers[sig] = signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            pass


def _restore_signal_handlers():
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, old in list(Lab._saved_handlers.items()):
        try:
            if signal.getsignal(sig) is _on_signal:
                signal.signal(sig, old)
        except (ValueError, OSError):
            pass
        del Lab._saved_handlers[sig]


Lab._saved_handlers = {}
