-- Kiln schema: runbooks (API 1.92; description and traits 1.112), as Ironic's runbooks table.
-- Ironic's runbook_steps and runbook_traits tables are folded in as JSON text: steps is the
-- validated list [{interface, step, args, order}] in the order given, traits a sorted list
-- without duplicates (server/model/runbook.h).
CREATE TABLE runbooks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL UNIQUE,
  description TEXT,
  steps TEXT NOT NULL DEFAULT '[]',
  disable_ramdisk INTEGER NOT NULL DEFAULT 0,
  extra TEXT NOT NULL DEFAULT '{}',
  public INTEGER NOT NULL DEFAULT 0,
  owner TEXT,
  traits TEXT NOT NULL DEFAULT '[]',
  created_at TEXT,
  updated_at TEXT
);
