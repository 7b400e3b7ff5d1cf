-- Kiln schema: the firmware interface (API 1.86) and cached firmware components (1.86; vendor,
-- model and serial_number 1.114), as Ironic's nodes.firmware_interface column and its
-- firmware_information table. Components belong to a node and are deleted with it.
ALTER TABLE nodes ADD COLUMN firmware_interface TEXT;
-- Nodes enrolled before the interface existed get Ironic's default implementation, which every
-- hardware type supports (a node must name one implementation per interface).
UPDATE nodes SET firmware_interface = 'no-firmware' WHERE firmware_interface IS NULL;

CREATE TABLE firmware_information (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  component TEXT NOT NULL,
  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  initial_version TEXT NOT NULL,
  current_version TEXT,
  last_version_flashed TEXT,
  vendor TEXT,
  model TEXT,
  serial_number TEXT,
  created_at TEXT,
  updated_at TEXT,
  UNIQUE (node_id, component)
);
