-- Nodes and table ownership (crates/server/src/cluster.rs). SQLite runs one node only,
-- but keeps the same rows so that the server's code is one: the table's owner and its
-- fencing epoch, checked in the write transaction (BEGIN IMMEDIATE) before any write.
CREATE TABLE nodes (
    id         TEXT    PRIMARY KEY,
    address    TEXT    NOT NULL,
    started_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    draining   INTEGER NOT NULL DEFAULT 0
);

ALTER TABLE game_tables ADD COLUMN owner TEXT;
ALTER TABLE game_tables ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
CREATE INDEX game_tables_by_owner ON game_tables (owner);


CREATE TABLE cluster_secret (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    secret TEXT    NOT NULL
);
