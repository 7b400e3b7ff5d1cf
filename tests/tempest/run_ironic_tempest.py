#!/usr/bin/python3
"""Run Debian's ironic-tempest-plugin API tests against a private kiln-server.

    run_ironic_tempest.py --kiln-server PATH [--regex REGEX] [--exclude-regex REGEX]
                          [--concurrency N] [--keep] [--subunit-out FILE]

Starts a kiln-server (auth_strategy = noauth, port 0, the compat harness's configuration) and a
fake Keystone v3 (fake_keystone.py, port 0) whose catalog points "baremetal" at the server,
writes a tempest.conf and a pre-provisioned accounts file into a temporary work directory, and
runs `python3 -m stestr run` over ironic_tempest_plugin.tests.api (the plugin's only API tests:
the admin ones; package 2.5.0 has no rbac tests). The tests are grouped by class as tempest
does, so a class's resource_setup and its credentials are shared by its tests.

Prints every failed test with its traceback, then one closing line
"tempest: N passed, N failed, N skipped" and exits 0 when nothing failed, 1 when a test failed
or none ran, 77 (skip) when tempest, the plugin or stestr is missing.

The work directory (tempest.conf, accounts.yaml, the subunit stream results.subunit, tempest.log
with every HTTP request and answer, kiln-server.log, keystone.log) is removed afterwards unless
--keep (or KILN_COMPAT_KEEP_TMP=1) is given; its path is printed either way.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compat"))

SKIP_RETURN_CODE = 77
DEBIAN_PYTHON = "/usr/bin/python3"
TEST_MODULE = "ironic_tempest_plugin.tests.api"

# Kiln advertises these (docs/compatibility.md, "Microversions").
MIN_MICROVERSION = "1.1"
MAX_MICROVERSION = "1.78"

# Pre-provisioned accounts of each kind (project admin, system admin) per stestr worker: a class
# holds its accounts until its resource_cleanup, so each worker needs its own.
ACCOUNTS_PER_WORKER = 2

# Per-test timeout (fixtures.Timeout in tempest's BaseTestCase, from OS_TEST_TIMEOUT).
TEST_TIMEOUT = 300


def _have_modules(python):
    probe = "import tempest, ironic_tempest_plugin, stestr, subunit, testtools"
    try:
        return subprocess.run([python, "-c", probe], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _reexec_if_needed():
    """Run under an interpreter that has tempest (Debian's), re-executing this script if not."""
    try:
        import tempest  # noqa: F401
        import ironic_tempest_plugin  # noqa: F401
        import stestr  # noqa: F401
        import subunit  # noqa: F401
        import testtools  # noqa: F401
        return
    except ImportError:
        pass
    if (os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON)
            and os.access(DEBIAN_PYTHON, os.X_OK) and _have_modules(DEBIAN_PYTHON)):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    sys.stderr.write("run_ironic_tempest: tempest, ironic-tempest-plugin or stestr is not "
                     "installed (apt-get install ironic-tempest-plugin); skipping\n")
    sys.exit(SKIP_RETURN_CODE)


def write_accounts(path, workers):
    lines = []
    for i in range(workers * ACCOUNTS_PER_WORKER):
        lines += [
            "- username: 'tempest-admin-%d'" % i,
            "  password: 'tempest-password'",
            "  user_domain_name: 'Default'",
            "  project_name: 'tempest-admin-project-%d'" % i,
            "  project_domain_name: 'Default'",
            "  roles: ['admin']",
            "- username: 'tempest-system-admin-%d'" % i,
            "  password: 'tempest-password'",
            "  user_domain_name: 'Default'",
            "  system: 'all'",
            "  roles: ['admin']",
        ]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_tempest_conf(path, workdir, keystone_url, accounts_path, hardware_types):
    conf = {
        "DEFAULT": {
            "debug": "true",
            "log_dir": workdir,
            "log_file": "tempest.log",
            "use_stderr": "false",
        },
        "oslo_concurrency": {"lock_path": os.path.join(workdir, "locks")},
        "auth": {
            # Static accounts: the fake Keystone has no admin API to create users with.
            "use_dynamic_credentials": "false",
            "test_accounts_file": accounts_path,
            "default_credentials_domain_name": "Default",
            "create_isolated_networks": "false",
            "admin_username": "tempest-admin-0",
            "admin_password": "tempest-password",
            "admin_project_name": "tempest-admin-project-0",
            "admin_domain_name": "Default",
        },
        "identity": {
            "auth_version": "v3",
            "uri_v3": keystone_url + "/v3",
            "region": "RegionOne",
            "disable_ssl_certificate_validation": "true",
        },
        "identity-feature-enabled": {"api_v2": "false", "api_v3": "true"},
        # A standalone Ironic: no Nova, Neutron, Glance, Cinder, Swift, Inspector.
        "service_available": {
            "ironic": "true",
            "ironic_inspector": "false",
            "nova": "false",
            "neutron": "false",
            "glance": "false",
            "cinder": "false",
            "swift": "false",
            "placement": "false",
        },
        # Ironic's CI enforces scope since Wallaby: the tests use the system-scoped admin
        # client. kiln-server (noauth) ignores the token either way.
        "enforce_scope": {"ironic": "true"},
        "baremetal": {
            "driver": "fake-hardware",
            "min_microversion": MIN_MICROVERSION,
            "max_microversion": MAX_MICROVERSION,
            "enabled_drivers": "",
            "enabled_hardware_types": ",".join(hardware_types),
            "enabled_bios_interfaces": "fake,no-bios",
            "enabled_boot_interfaces": "fake,ipxe,pxe",
            "enabled_deploy_interfaces": "fake,direct",
            "enabled_management_interfaces": "fake,ipmitool,redfish,noop",
            "enabled_power_interfaces": "fake,ipmitool,redfish",
            "enabled_raid_interfaces": "fake,no-raid,agent",
            "enabled_rescue_interfaces": "fake,no-rescue",
            "default_rescue_interface": "no-rescue",
            # fake-hardware transitions finish in well under a second.
            "power_timeout": "60",
            "unprovision_timeout": "60",
            "active_timeout": "60",
            "deploywait_timeout": "15",
        },
        "baremetal_feature_enabled": {
            "ipxe_enabled": "false",
            "adoption": "false",
            "software_raid": "false",
            "deploy_time_raid": "false",
        },
    }
    with open(path, "w") as f:
        for section, values in conf.items():
            f.write("[%s]\n" % section)
            for key, value in values.items():
                f.write("%s = %s\n" % (key, value))
            f.write("\n")


def write_stestr_conf(path):
    import ironic_tempest_plugin
    top_dir = os.path.dirname(os.path.dirname(os.path.abspath(ironic_tempest_plugin.__file__)))
    test_path = os.path.join(top_dir, *TEST_MODULE.split("."))
    with open(path, "w") as f:
        f.write("[DEFAULT]\n")
        f.write("test_path=%s\n" % test_path)
        f.write("top_dir=%s\n" % top_dir)
        # One worker per test class, as tempest's own .stestr.conf.
        f.write("group_regex=([^\\.]*\\.)*\n")


def read_results(subunit_path):
    """{test id: (status, details text)} from a subunit v2 stream."""
    import subunit
    import testtools

    results = {}

    def on_test(test):
        status = test["status"]
        text = []
        for name, content in test["details"].items():
            try:
                body = content.as_text()
            except Exception:  # binary attachment
                continue
            if body.strip():
                text.append("%s:\n%s" % (name, body.rstrip()))
        results[test["id"]] = (status, "\n".join(text))

    with open(subunit_path, "rb") as stream:
        case = subunit.ByteStreamToStreamResult(stream, non_subunit_name="stdout")
        result = testtools.StreamToDict(on_test)
        result.startTestRun()
        try:
            case.run(result)
        finally:
            result.stopTestRun()
    return results


def main(argv=None):
    _reexec_if_needed()
    import kiln_compat
    from fake_keystone import FakeKeystone

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln-server", default=os.environ.get("KILN_SERVER_BIN", ""),
                        help="path of the kiln-server binary")
    parser.add_argument("--regex", default="",
                        help="stestr filter (regex on test ids), e.g. test_nodes")
    parser.add_argument("--exclude-regex", default="",
                        help="stestr --exclude-regex: leave out the tests it matches")
    parser.add_argument("--concurrency", type=int, default=2,
                        help="stestr workers (default 2)")
    parser.add_argument("--keep", action="store_true",
                        default=bool(os.environ.get("KILN_COMPAT_KEEP_TMP")),
                        help="keep the work directory")
    parser.add_argument("--subunit-out", help="copy the subunit stream here")
    args = parser.parse_args(argv)
    if not args.kiln_server or not os.access(args.kiln_server, os.X_OK):
        parser.error("--kiln-server PATH (an executable kiln-server) is required")
    workers = max(1, args.concurrency)

    workdir = tempfile.mkdtemp(prefix="kiln-tempest-")
    os.makedirs(os.path.join(workdir, "etc"))
    os.makedirs(os.path.join(workdir, "locks"))
    print("run_ironic_tempest: work directory %s" % workdir, flush=True)

    server = kiln_compat.KilnServer(os.path.abspath(args.kiln_server))
    keystone = None
    ks_log = None
    status = 1
    try:
        server.start()
        print("run_ironic_tempest: kiln-server at %s" % server.endpoint, flush=True)
        ks_log = open(os.path.join(workdir, "keystone.log"), "w")
        keystone = FakeKeystone(server.endpoint, log=ks_log)
        keystone.start()
        print("run_ironic_tempest: fake keystone at %s" % keystone.url, flush=True)

        accounts = os.path.join(workdir, "etc", "accounts.yaml")
        write_accounts(accounts, workers)
        write_tempest_conf(os.path.join(workdir, "etc", "tempest.conf"), workdir,
                           keystone.url, accounts, kiln_compat.HARDWARE_TYPES)
        write_stestr_conf(os.path.join(workdir, ".stestr.conf"))

        env = dict(os.environ)
        for key in list(env):
            if key.startswith("OS_") or key in ("PYTHONPATH", "PYTHONHOME"):
                del env[key]
        env.update({
            "TEMPEST_CONFIG_DIR": os.path.join(workdir, "etc"),
            "TEMPEST_CONFIG": "tempest.conf",
            "OS_TEST_TIMEOUT": str(TEST_TIMEOUT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": workdir,  # keeps ~/.stestr.yaml and clouds.yaml of the caller out
            "no_proxy": "127.0.0.1,localhost",
            "NO_PROXY": "127.0.0.1,localhost",
        })
        for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            env.pop(key, None)

        cmd = [sys.executable, "-m", "stestr", "--here", workdir, "run",
               "--concurrency", str(workers)]
        if args.exclude_regex:
            cmd += ["--exclude-regex", args.exclude_regex]
        if args.regex:
            cmd.append(args.regex)
        print("run_ironic_tempest: %s" % " ".join(cmd), flush=True)
        run = subprocess.run(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL)

        subunit_path = os.path.join(workdir, "results.subunit")
        with open(subunit_path, "wb") as out:
            subprocess.run([sys.executable, "-m", "stestr", "--here", workdir, "last",
                            "--subunit"], cwd=workdir, env=env, stdout=out,
                           stdin=subprocess.DEVNULL)
        if args.subunit_out:
            shutil.copyfile(subunit_path, args.subunit_out)
        results = read_results(subunit_path)

        passed = sorted(t for t, (s, _) in results.items() if s in ("success", "xfail"))
        skipped = sorted(t for t, (s, _) in results.items() if s == "skip")
        failed = sorted(t for t, (s, _) in results.items()
                        if s not in ("success", "xfail", "skip", "exists", "inprogress"))
        if failed:
            print("\n==== failed tests ====")
            for test_id in failed:
                print("\n---- %s (%s) ----\n%s" % (test_id, results[test_id][0],
                                                  results[test_id][1]))
        print("\n==== summary ====")
        for test_id in failed:
            print("FAIL %s" % test_id)
        print("run_ironic_tempest: stestr exited %d; work directory %s"
              % (run.returncode, workdir))
        print("tempest: %d passed, %d failed, %d skipped"
              % (len(passed), len(failed), len(skipped)))
        if failed or not (passed or skipped):
            status = 1
        elif run.returncode != 0:
            print("run_ironic_tempest: stestr failed without a failed test (see above)")
            status = 1
        else:
            status = 0
    finally:
        if keystone is not None:
            keystone.stop()
        if ks_log is not None:
            ks_log.close()
        # Stop the server first so that its log is complete, and keep the log next to
        # tempest.log before server.stop() removes the server's own directory.
        if server.proc is not None and server.proc.poll() is None:
            server.proc.terminate()
            try:
                server.proc.wait(timeout=kiln_compat.SERVER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass  # server.stop() kills it
        if server.log_path and os.path.exists(server.log_path):
            shutil.copyfile(server.log_path, os.path.join(workdir, "kiln-server.log"))
        server.stop()
        if args.keep:
            print("run_ironic_tempest: kept %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
