-- Kiln schema: the conductors table (several kiln-servers on one database, issue 15), as
-- Ironic's: one row per kiln-server ([DEFAULT] host), its conductor group and hardware types,
-- whether it is running, and its last heartbeat in updated_at. A conductor is alive while it is
-- online and its heartbeat is younger than [conductor] heartbeat_timeout.
CREATE TABLE conductors (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hostname TEXT NOT NULL UNIQUE,
  conductor_group TEXT NOT NULL DEFAULT '',
  drivers TEXT NOT NULL DEFAULT '[]',
  online INTEGER NOT NULL DEFAULT 1,
  created_at TEXT,
  updated_at TEXT
);
-- Takeover looks nodes up by the conductor that reserved them.
CREATE INDEX nodes_reservation ON nodes (reservation);
