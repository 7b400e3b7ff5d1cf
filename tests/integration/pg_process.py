"""A throwaway PostgreSQL server for the integration tests, as tests/support/
postgres_test_server.cpp starts one: Debian's binaries, initdb into a temporary directory as the
`postgres` user (through runuser: root may not run it), TCP on 127.0.0.1 only, no Unix socket,
trust for 127.0.0.1, durability off. `PostgresServer.unavailable()` says why it cannot run here
(the caller then skips).

    pg = PostgresServer(); pg.start(); url = pg.url("postgres"); ...; pg.stop()
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile


def _bin_dir():
    dirs = sorted(d for d in glob.glob("/usr/lib/postgresql/*/bin")
                  if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")))
    return dirs[-1] if dirs else None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self):
        self.bin = _bin_dir()
        self.root = None
        self.port = None
        self.running = False

    @staticmethod
    def unavailable():
        if os.geteuid() != 0:
            return "not root: initdb has to run as the postgres user"
        if not _bin_dir():
            return "PostgreSQL is not installed (no /usr/lib/postgresql/<version>/bin/initdb)"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "there is no postgres user"
        return None

    def _as_postgres(self, argv, timeout):
        subprocess.run(["runuser", "-u", "postgres", "--"] + argv, check=True, timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def start(self):
        self.root = tempfile.mkdtemp(prefix="kiln-pg-")
        pg = pwd.getpwnam("postgres")
        os.chown(self.root, pg.pw_uid, pg.pw_gid)
        data = os.path.join(self.root, "data")
        self._as_postgres([os.path.join(self.bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
                           "-E", "UTF8", "--locale=C", "--no-sync"], 180)
        with open(os.path.join(data, "pg_hba.conf"), "w") as f:
            f.write("host all all 127.0.0.1/32 trust\n")
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write("\n# kiln integration tests (tests/integration/pg_process.py)\n"
                    "listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"
                    "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                    "max_connections = 300\n")
        last = None
        for _ in range(3):  # a port found free may be taken before the server binds it
            self.port = _free_port()
            try:
                self._as_postgres([os.path.join(self.bin, "pg_ctl"), "-D", data, "-l",
                                   os.path.join(self.root, "log"), "-w", "-t", "60", "-o",
                                   "-p %d" % self.port, "start"], 90)
                self.running = True
                return
            except subprocess.CalledProcessError as e:
                last = e.stdout
        raise RuntimeError("pg_ctl start failed: %s" % last)

    def sql(self, statement, database="postgres"):
        """Runs one SQL statement with psql as the postgres user; returns its output."""
        return subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(self.bin, "psql"),
                               "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d",
                               database, "-v", "ON_ERROR_STOP=1", "-At", "-c", statement],
                              check=True, timeout=120, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True).stdout

    def url(self, database="postgres"):
        return "postgresql://postgres@127.0.0.1:%d/%s" % (self.port, database)

    def stop(self):
        if self.running:
            try:
                self._as_postgres([os.path.join(self.bin, "pg_ctl"), "-D", os.path.join(self.root, "data"),
                                   "-m", "immediate", "-w", "stop"], 60)
            except (subprocess.SubprocessError, OSError):
                pass
            self.running = False
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
