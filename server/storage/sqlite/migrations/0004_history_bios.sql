-- Kiln schema: node history (API 1.78) and cached BIOS settings (API 1.40, registry 1.74), as
-- Ironic's node_history and bios_settings tables. Both belong to a node and are deleted with it.
CREATE TABLE node_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  conductor TEXT,
  event_type TEXT,
  severity TEXT,
  event TEXT,
  user TEXT,
  created_at TEXT,
  updated_at TEXT
);
CREATE INDEX node_history_node_id ON node_history (node_id);

-- Ironic's column `unique` is is_unique here (UNIQUE is an SQL keyword).
CREATE TABLE bios_settings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  value TEXT,
  attribute_type TEXT,
  allowable_values TEXT,
  lower_bound INTEGER,
  max_length INTEGER,
  min_length INTEGER,
  read_only INTEGER,
  reset_required INTEGER,
  is_unique INTEGER,
  upper_bound INTEGER,
  created_at TEXT,
  updated_at TEXT,
  UNIQUE (node_id, name)
);
