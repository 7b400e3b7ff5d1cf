#!/usr/bin/python3
"""kiln-server --upgrade-database (docs/configuration.md "Upgrading the database"): a database of
the previous schema is migrated and keeps every node.

The previous schema is made from a current one: kiln-server creates an SQLite database and
three nodes through the API, then the newest migration (0010, the node event journal: one table
and its indexes, nothing else) is undone by hand (its table dropped, its schema_version row
deleted), which is exactly the schema of the version before it. Then:
  - `kiln-server --upgrade-database` exits 0, says `schema_version=10`, and the database has the
    table and the version again, with the three nodes;
  - run again, it changes nothing and exits 0;
  - a database newer than this kiln-server (schema_version 99) is refused: exit 1, a message
    naming both versions, nothing changed;
  - kiln-server then starts on the upgraded database and lists the three nodes, whose events
    can be read (the table the upgrade made);
  - while it runs (and holds the file), SIGUSR1 makes it write an online backup into
    [database] backup_dir: a private file (0600) that opens as a database with the three nodes,
    logged `database backed up`.

Then the same on PostgreSQL (skipped, and said so, without root or PostgreSQL).

Usage: upgrade_database_test.py --server build/server/kiln-server
"""
import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_process import KilnServer, print_log_tails  # noqa: E402
from pg_process import PostgresServer  # noqa: E402

CONFIG = ("[DEFAULT]\nenabled_hardware_types = fake-hardware\n[conductor]\nsync_power_state_interval = 0\n"
          "[database]\nbackup_dir = %(work)s/backups\n")


def wait_for_log(server, text, timeout=30):
    """Waits until kiln-server's log holds `text` (it writes each line as it happens)."""
    deadline = time.monotonic() + timeout
    while True:
        with open(server.log_path, errors="replace") as f:
            log = f.read()
        if text in log:
            return log
        assert server.proc.poll() is None, "kiln-server exited"
        assert time.monotonic() < deadline, "no %r in the log" % text
        time.sleep(0.05)


def sql(db, statement):
    """Runs one statement in its own connection, closed at once (kiln-server keeps its SQLite
    database to itself: an open connection here would make it refuse the file). Returns the
    rows."""
    c = sqlite3.connect(db)
    try:
        rows = c.execute(statement).fetchall()
        c.commit()
        return rows
    finally:
        c.close()


def version(db):
    return sql(db, "SELECT MAX(version) FROM schema_version")[0][0]


def has_events_table(db):
    return sql(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'node_events'")[0][0] == 1


# The newest migration, which to_previous_schema undoes.
NEWEST = 10


def to_previous_schema(db):
    """Turns a current SQLite database into one of the previous schema: migration 10 (the node
    event journal: one table and its indexes, nothing else) undone by hand."""
    latest = version(db)
    assert latest == NEWEST, "the test undoes migration %d; the newest is %s" % (NEWEST, latest)
    sql(db, "DROP TABLE node_events")
    sql(db, "DELETE FROM schema_version WHERE version = %d" % NEWEST)
    assert version(db) == NEWEST - 1 and not has_events_table(db)


def upgrade(binary, conf):
    return subprocess.run([binary, "--upgrade-database", "--config-file", conf],
                          capture_output=True, text=True, timeout=60)


def create_nodes(server, names):
    for name in names:
        status, body = server.call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": name})
        assert status == 201, body


def check_newer_refused(binary, conf, run_sql):
    """A database whose schema_version is 99 is refused (exit 1, both versions named) and left
    as it was; `run_sql(statement)` runs SQL on it (the row is removed again)."""
    run_sql("INSERT INTO schema_version (version) VALUES (99)")
    newer = upgrade(binary, conf)
    assert newer.returncode == 1, (newer.returncode, newer.stderr)
    assert "99 is newer than this kiln-server understands (%d)" % NEWEST in newer.stderr, newer.stderr
    run_sql("DELETE FROM schema_version WHERE version = 99")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-upgrade-db-") as work:
        db = os.path.join(work, "kiln.sqlite")
        server = KilnServer(args.server, work, CONFIG % {"work": work})
        try:
            server.start()
            create_nodes(server, ("n1", "n2", "n3"))
            server.stop()
            to_previous_schema(db)

            conf = os.path.join(work, "kiln.conf")  # KilnServer wrote it
            done = upgrade(args.server, conf)
            assert done.returncode == 0, (done.returncode, done.stderr)
            assert "database upgraded" in done.stderr and "schema_version=10" in done.stderr, done.stderr
            assert version(db) == 10 and has_events_table(db)
            names = sorted(r[0] for r in sql(db, "SELECT name FROM nodes"))
            assert names == ["n1", "n2", "n3"], names

            again = upgrade(args.server, conf)
            assert again.returncode == 0 and "schema_version=10" in again.stderr, again.stderr
            assert version(db) == 10

            check_newer_refused(args.server, conf, lambda statement: sql(db, statement))

            server.start()
            status, body = server.call("GET", "/v1/nodes")
            assert status == 200 and sorted(n["name"] for n in body["nodes"]) == ["n1", "n2", "n3"], body
            status, body = server.call("GET", "/v1/nodes/n1/events")
            assert status == 200, body

            server.proc.send_signal(signal.SIGUSR1)
            log = wait_for_log(server, "database backed up")
            backups = os.path.join(work, "backups")
            [name] = os.listdir(backups)
            backup = os.path.join(backups, name)
            assert backup in log and "SIGUSR1" in log, log
            assert os.stat(backup).st_mode & 0o777 == 0o600 and os.stat(backups).st_mode & 0o777 == 0o700
            assert sorted(r[0] for r in sql(backup, "SELECT name FROM nodes")) == ["n1", "n2", "n3"]
            assert version(backup) == NEWEST
            status, body = server.call("GET", "/v1/nodes")  # still serving
            assert status == 200, body
            server.stop()
        except BaseException:
            print_log_tails([server.log_path])
            raise
        finally:
            server.stop()
    postgres(args.server)
    print("PASS")


def postgres(binary):
    """The same upgrade on PostgreSQL (a throwaway server, tests/integration/pg_process.py):
    migration 10 undone in PostgreSQL's dialect, `--upgrade-database` brings it back and keeps
    the nodes, a newer schema is refused. Skipped (said so) where PostgreSQL cannot run."""
    why = PostgresServer.unavailable()
    if why:
        print("SKIP (PostgreSQL part): " + why)
        return
    pg = PostgresServer()
    with tempfile.TemporaryDirectory(prefix="kiln-upgrade-pg-") as work:
        server = None
        try:
            pg.start()
            pg.sql("CREATE DATABASE kiln_upgrade")

            def query(statement):
                return pg.sql(statement, "kiln_upgrade").strip()

            server = KilnServer(binary, work, CONFIG % {"work": work}, database=pg.url("kiln_upgrade"))
            server.start()
            create_nodes(server, ("p1", "p2"))
            server.stop()
            assert query("SELECT MAX(version) FROM schema_version") == str(NEWEST)
            query("DROP TABLE node_events")
            query("DELETE FROM schema_version WHERE version = %d" % NEWEST)
            assert query("SELECT to_regclass('node_events') IS NULL") == "t"

            conf = os.path.join(work, "kiln.conf")
            done = upgrade(binary, conf)
            assert done.returncode == 0, (done.returncode, done.stderr)
            assert "database upgraded" in done.stderr and "schema_version=%d" % NEWEST in done.stderr, done.stderr
            assert "postgresql://127.0.0.1:%d/******" % pg.port in done.stderr, done.stderr
            assert query("SELECT MAX(version) FROM schema_version") == str(NEWEST)
            assert query("SELECT to_regclass('node_events') IS NOT NULL") == "t"
            assert query("SELECT string_agg(name, ',' ORDER BY name) FROM nodes") == "p1,p2"

            check_newer_refused(binary, conf, query)

            server.start()
            status, body = server.call("GET", "/v1/nodes/p1/events")
            assert status == 200, body
            server.stop()
        except BaseException:
            if server:
                print_log_tails([server.log_path])
            raise
        finally:
            if server:
                server.stop()
            pg.stop()


if __name__ == "__main__":
    main()
