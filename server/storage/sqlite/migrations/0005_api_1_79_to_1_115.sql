-- Kiln schema version 5: the node, port, port group and history fields of API 1.79-1.115
-- (shard 1.82, parent_node 1.83, service_step 1.87, disable_power_off 1.95, instance_name
-- 1.104, health 1.109; port name 1.88, description 1.97, vendor 1.100, category 1.101,
-- available_for_dynamic_portgroup 1.111; port group physical_network 1.102, category 1.103,
-- dynamic_portgroup 1.111; history project 1.113, state, target_provision_state and
-- duration_seconds 1.115), and the node inventory (1.81) as Ironic's node_inventory table.
ALTER TABLE nodes ADD COLUMN shard TEXT;
ALTER TABLE nodes ADD COLUMN parent_node TEXT;
ALTER TABLE nodes ADD COLUMN service_step TEXT NOT NULL DEFAULT '{}';
ALTER TABLE nodes ADD COLUMN disable_power_off INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN instance_name TEXT;
ALTER TABLE nodes ADD COLUMN health TEXT;
CREATE INDEX nodes_shard ON nodes (shard);
CREATE INDEX nodes_parent_node ON nodes (parent_node);

ALTER TABLE ports ADD COLUMN name TEXT;
CREATE UNIQUE INDEX ports_name ON ports (name);
ALTER TABLE ports ADD COLUMN description TEXT;
ALTER TABLE ports ADD COLUMN vendor TEXT;
ALTER TABLE ports ADD COLUMN category TEXT;
ALTER TABLE ports ADD COLUMN available_for_dynamic_portgroup INTEGER NOT NULL DEFAULT 1;

ALTER TABLE portgroups ADD COLUMN physical_network TEXT;
ALTER TABLE portgroups ADD COLUMN category TEXT;
ALTER TABLE portgroups ADD COLUMN dynamic_portgroup INTEGER NOT NULL DEFAULT 0;

ALTER TABLE node_history ADD COLUMN project TEXT;
ALTER TABLE node_history ADD COLUMN state TEXT;
ALTER TABLE node_history ADD COLUMN target_provision_state TEXT;
ALTER TABLE node_history ADD COLUMN duration_seconds INTEGER;

CREATE TABLE node_inventory (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  node_id INTEGER NOT NULL UNIQUE REFERENCES nodes(id) ON DELETE CASCADE,
  inventory_data TEXT NOT NULL DEFAULT '{}',
  plugin_data TEXT NOT NULL DEFAULT '{}',
  created_at TEXT,
  updated_at TEXT
);
