-- Quick play (crates/server/src/quickplay.rs): who waits in which queue. A queue is a
-- pool (game, seats). The rows live in the database, not in one server's memory, so that
-- several servers on one Postgres can share the queues: a matcher takes the entries it
-- seats in one transaction that deletes them all or none (Store::queue_take), and the
-- primary key keeps a player in one queue at a time.
CREATE TABLE queue_entries (
    player_id TEXT    NOT NULL PRIMARY KEY REFERENCES players (id),
    name      TEXT    NOT NULL,
    game      TEXT    NOT NULL,
    seats     INTEGER NOT NULL CHECK (seats > 0),
    -- In starting deviations from the starting rating, the same scale for both systems.
    rating    DOUBLE PRECISION NOT NULL,
    -- The waiting connection: only it takes the entry out when it closes.
    conn      TEXT    NOT NULL,
    joined_at BIGINT  NOT NULL
);
CREATE INDEX queue_entries_by_pool ON queue_entries (game, seats, joined_at);
