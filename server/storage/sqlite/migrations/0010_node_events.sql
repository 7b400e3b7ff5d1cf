-- Kiln schema: the node event journal (issue 27; server/model/node_event.h). One row per event
-- of a node; id is the global, increasing event id (AUTOINCREMENT: never reused, also after
-- pruning, so a stream resumed with Last-Event-ID never skips a newer event). created_at is
-- UTC ISO 8601 with milliseconds (it sorts as text); fields is the kind's data as compact JSON;
-- conductor the kiln-server that wrote it. Events go with their node.
CREATE TABLE node_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  node_uuid TEXT NOT NULL,
  created_at TEXT NOT NULL,
  kind TEXT NOT NULL,
  fields TEXT NOT NULL DEFAULT '{}',
  conductor TEXT
);
-- A node's events after an id (the listing and the streams' catch-up).
CREATE INDEX node_events_node_id ON node_events (node_id, id);
-- Pruning by age.
CREATE INDEX node_events_created_at ON node_events (created_at);
