"""Helpers the e2e test scripts share: counted checks, bounded polling, serial logs, pids."""
import re
import time
import traceback

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# Counts of the checks run by step() and skip(); the scripts report and exit with them.
results = {"passed": 0, "failed": 0, "skipped": 0}


def skip(name, why):
    """A check that cannot run here (a missing package): reported, counted, not a failure."""
    results["skipped"] += 1
    print("skip %s: %s" % (name, why), flush=True)


def step(name, fn):
    """Runs one check; a failure is reported and counted, later steps still run."""
    start = time.monotonic()
    try:
        fn()
    except Exception:  # noqa: BLE001 - reported
        results["failed"] += 1
        print("FAIL %s (%.1f s)" % (name, time.monotonic() - start), flush=True)
        traceback.print_exc()
        return False
    results["passed"] += 1
    print("ok   %s (%.1f s)" % (name, time.monotonic() - start), flush=True)
    return True


def wait_until(what, predicate, timeout, interval=0.1):
    """Polls predicate() until it returns a true value (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def serial_text(path):
    """A serial log without ANSI escapes and carriage returns ("" while it does not exist)."""
    try:
        with open(path, "rb") as f:
            return ANSI.sub("", f.read().decode("latin-1")).replace("\r", "")
    except OSError:
        return ""


def pid_alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
