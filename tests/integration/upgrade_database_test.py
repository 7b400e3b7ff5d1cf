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
    can be read (the table the upgrade made).

Usage: upgrade_database_test.py --server build/server/kiln-server
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_process import KilnServer, print_log_tails  # noqa: E402

CONFIG = "[DEFAULT]\nenabled_hardware_types = fake-hardware\n[conductor]\nsync_power_state_interval = 0\n"


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


def upgrade(binary, conf):
    return subprocess.run([binary, "--upgrade-database", "--config-file", conf],
                          capture_output=True, text=True, timeout=60)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-upgrade-db-") as work:
        db = os.path.join(work, "kiln.sqlite")
        server = KilnServer(args.server, work, CONFIG)
        try:
            server.start()
            for name in ("n1", "n2", "n3"):
                status, body = server.call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": name})
                assert status == 201, body
            server.stop()
            latest = version(db)
            assert latest == 10, "the test undoes migration 10; the newest is %s" % latest

            sql(db, "DROP TABLE node_events")
            sql(db, "DELETE FROM schema_version WHERE version = 10")
            assert version(db) == 9 and not has_events_table(db)

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

            sql(db, "INSERT INTO schema_version (version) VALUES (99)")
            newer = upgrade(args.server, conf)
            assert newer.returncode == 1, (newer.returncode, newer.stderr)
            assert "99 is newer than this kiln-server understands (10)" in newer.stderr, newer.stderr
            sql(db, "DELETE FROM schema_version WHERE version = 99")

            server.start()
            status, body = server.call("GET", "/v1/nodes")
            assert status == 200 and sorted(n["name"] for n in body["nodes"]) == ["n1", "n2", "n3"], body
            status, body = server.call("GET", "/v1/nodes/n1/events")
            assert status == 200, body
            server.stop()
        except BaseException:
            print_log_tails([server.log_path])
            raise
        finally:
            server.stop()
    print("PASS")


if __name__ == "__main__":
    main()
