-- Kiln schema version 3: volume connectors and volume targets (API 1.32), Ironic's
-- volume_connectors and volume_targets tables with node_uuid standing for node_id. Ironic's
-- unique constraints: (type, connector_id) across all nodes, and (node, boot_index).
CREATE TABLE volume_connectors (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  node_uuid TEXT NOT NULL REFERENCES nodes(uuid) ON DELETE CASCADE,
  type TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  extra TEXT NOT NULL DEFAULT '{}',
  created_at TEXT,
  updated_at TEXT,
  UNIQUE (type, connector_id)
);
CREATE INDEX volume_connectors_node_uuid ON volume_connectors (node_uuid);

CREATE TABLE volume_targets (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  node_uuid TEXT NOT NULL REFERENCES nodes(uuid) ON DELETE CASCADE,
  volume_type TEXT NOT NULL,
  properties TEXT NOT NULL DEFAULT '{}',
  boot_index INTEGER NOT NULL,
  volume_id TEXT NOT NULL,
  extra TEXT NOT NULL DEFAULT '{}',
  created_at TEXT,
  updated_at TEXT,
  UNIQUE (node_uuid, boot_index)
);
