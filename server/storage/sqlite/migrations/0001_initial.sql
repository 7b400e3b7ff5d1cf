-- Kiln schema version 1: the API resources of issue 2 (nodes, node traits, ports, port groups,
-- chassis, deploy templates). Column names are the API field names (server/model/*).
CREATE TABLE chassis (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  description TEXT,
  extra TEXT NOT NULL DEFAULT '{}',
  created_at TEXT,
  updated_at TEXT
);

CREATE TABLE nodes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT UNIQUE,
  driver TEXT NOT NULL,
  driver_info TEXT NOT NULL DEFAULT '{}',
  driver_internal_info TEXT NOT NULL DEFAULT '{}',
  properties TEXT NOT NULL DEFAULT '{}',
  instance_info TEXT NOT NULL DEFAULT '{}',
  instance_uuid TEXT UNIQUE,
  chassis_uuid TEXT REFERENCES chassis(uuid),
  extra TEXT NOT NULL DEFAULT '{}',
  power_state TEXT,
  target_power_state TEXT,
  provision_state TEXT NOT NULL,
  target_provision_state TEXT,
  provision_updated_at TEXT,
  last_error TEXT,
  maintenance INTEGER NOT NULL DEFAULT 0,
  maintenance_reason TEXT,
  fault TEXT,
  reservation TEXT,
  console_enabled INTEGER NOT NULL DEFAULT 0,
  clean_step TEXT NOT NULL DEFAULT '{}',
  deploy_step TEXT NOT NULL DEFAULT '{}',
  raid_config TEXT NOT NULL DEFAULT '{}',
  target_raid_config TEXT NOT NULL DEFAULT '{}',
  inspection_started_at TEXT,
  inspection_finished_at TEXT,
  resource_class TEXT,
  bios_interface TEXT,
  boot_interface TEXT,
  console_interface TEXT,
  deploy_interface TEXT,
  inspect_interface TEXT,
  management_interface TEXT,
  network_interface TEXT,
  power_interface TEXT,
  raid_interface TEXT,
  rescue_interface TEXT,
  storage_interface TEXT,
  vendor_interface TEXT,
  conductor_group TEXT NOT NULL DEFAULT '',
  automated_clean INTEGER,
  protected INTEGER NOT NULL DEFAULT 0,
  protected_reason TEXT,
  owner TEXT,
  description TEXT,
  retired INTEGER NOT NULL DEFAULT 0,
  retired_reason TEXT,
  lessee TEXT,
  network_data TEXT NOT NULL DEFAULT '{}',
  boot_mode TEXT,
  secure_boot INTEGER,
  created_at TEXT,
  updated_at TEXT
);
CREATE INDEX nodes_provision_state ON nodes (provision_state);
CREATE INDEX nodes_driver ON nodes (driver);
CREATE INDEX nodes_owner ON nodes (owner);
CREATE INDEX nodes_resource_class ON nodes (resource_class);

CREATE TABLE node_traits (
  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  trait TEXT NOT NULL,
  PRIMARY KEY (node_id, trait)
);
CREATE INDEX node_traits_trait ON node_traits (trait);

CREATE TABLE portgroups (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT UNIQUE,
  address TEXT UNIQUE,
  node_uuid TEXT NOT NULL REFERENCES nodes(uuid) ON DELETE CASCADE,
  extra TEXT NOT NULL DEFAULT '{}',
  internal_info TEXT NOT NULL DEFAULT '{}',
  standalone_ports_supported INTEGER NOT NULL DEFAULT 1,
  mode TEXT,
  properties TEXT NOT NULL DEFAULT '{}',
  created_at TEXT,
  updated_at TEXT
);

CREATE TABLE ports (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  address TEXT NOT NULL UNIQUE,
  node_uuid TEXT NOT NULL REFERENCES nodes(uuid) ON DELETE CASCADE,
  extra TEXT NOT NULL DEFAULT '{}',
  internal_info TEXT NOT NULL DEFAULT '{}',
  local_link_connection TEXT NOT NULL DEFAULT '{}',
  pxe_enabled INTEGER NOT NULL DEFAULT 1,
  portgroup_uuid TEXT REFERENCES portgroups(uuid),
  physical_network TEXT,
  is_smartnic INTEGER NOT NULL DEFAULT 0,
  created_at TEXT,
  updated_at TEXT
);
CREATE INDEX ports_node_uuid ON ports (node_uuid);

CREATE TABLE deploy_templates (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL UNIQUE,
  steps TEXT NOT NULL,
  extra TEXT NOT NULL DEFAULT '{}',
  created_at TEXT,
  updated_at TEXT
);
