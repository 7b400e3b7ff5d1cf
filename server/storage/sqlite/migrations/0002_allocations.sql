-- Kiln schema version 2: allocations (API 1.52-1.60), the scheduler's requests for a node.
-- A node names the allocation holding it in allocation_uuid (kept in step with
-- allocations.node_uuid in the same transaction).
CREATE TABLE allocations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT UNIQUE,
  node_uuid TEXT UNIQUE REFERENCES nodes(uuid),
  state TEXT NOT NULL,
  last_error TEXT,
  resource_class TEXT,
  traits TEXT NOT NULL DEFAULT '[]',
  candidate_nodes TEXT NOT NULL DEFAULT '[]',
  extra TEXT NOT NULL DEFAULT '{}',
  owner TEXT,
  created_at TEXT,
  updated_at TEXT
);
CREATE INDEX allocations_state ON allocations (state);

ALTER TABLE nodes ADD COLUMN allocation_uuid TEXT;
