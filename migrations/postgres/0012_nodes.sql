-- Several server nodes on one database (crates/server/src/cluster.rs).
--
-- A node announces itself in `nodes` and renews its lease (expires_at, Unix ms on the
-- database's clock) every second; a node whose lease ran out is dead to the others.
CREATE TABLE nodes (
    id         TEXT    PRIMARY KEY,
    -- Where the other nodes reach it (http://host:port), for forwarding.
    address    TEXT    NOT NULL,
    started_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    -- Shutting down: it hands its tables over and takes no new ones.
    draining   BOOLEAN NOT NULL DEFAULT FALSE
);

-- The owner of a live table, and the fencing epoch: it grows at every claim, and every
-- write of a table's log names the epoch its writer holds (fib_fence).
ALTER TABLE game_tables ADD COLUMN owner TEXT;
ALTER TABLE game_tables ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
-- A group of plain actions is fenced inside its one statement: a table whose epoch is not
-- the writer's gets -1, which this refuses (crates/store/src/postgres.rs).
ALTER TABLE game_tables ADD CONSTRAINT game_tables_fence CHECK (lease_epoch >= 0);
CREATE INDEX game_tables_by_owner ON game_tables (owner);


-- A secret the nodes share, so a node believes another's forwarded client address.
CREATE TABLE cluster_secret (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    secret TEXT    NOT NULL
);

-- Refuses (SQLSTATE FB001) unless every table `ids[i]` is still at epoch `epochs[i]`.
-- The rows stay share-locked until the caller's transaction ends, so a claim (which
-- updates the row) waits for a write that passed the fence, and a write that comes after a
-- claim sees the claim's epoch and is refused.
CREATE FUNCTION fib_fence(ids TEXT[], epochs BIGINT[]) RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT g.id, g.lease_epoch, f.epoch
        FROM game_tables g JOIN UNNEST(ids, epochs) AS f (id, epoch) ON g.id = f.id
        ORDER BY g.id
        FOR SHARE OF g
    LOOP
        IF r.lease_epoch <> r.epoch THEN
            RAISE EXCEPTION 'table % is at epoch %, the write holds epoch %',
                r.id, r.lease_epoch, r.epoch USING ERRCODE = 'FB001';
        END IF;
    END LOOP;
    RETURN 1;
END
$$;
