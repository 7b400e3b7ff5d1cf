-- Kiln schema: inspection rules (API 1.96), as Ironic's inspection_rules table (without its
-- `scope` column, which the API never shows). conditions and actions are JSON arrays.
CREATE TABLE inspection_rules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  description TEXT,
  phase TEXT NOT NULL DEFAULT 'main',
  priority INTEGER NOT NULL DEFAULT 0,
  sensitive INTEGER NOT NULL DEFAULT 0,
  conditions TEXT NOT NULL DEFAULT '[]',
  actions TEXT NOT NULL DEFAULT '[]',
  created_at TEXT,
  updated_at TEXT
);
CREATE INDEX inspection_rules_phase ON inspection_rules (phase);
