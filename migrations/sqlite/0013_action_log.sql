-- The action log (crates/store/src/sqlite.rs, "The action log"): a group commit appends its
-- actions here, at the end of one rowid b-tree, instead of into `actions`, whose key
-- (table, round, seq) puts every table's new action on a page of its own: a commit of 20
-- moves wrote 20-odd pages. The store moves the log into `actions` every quarter second
-- in one transaction (a page per table per fold) and reads both.
CREATE TABLE action_log (
    id         INTEGER PRIMARY KEY,
    table_id   TEXT    NOT NULL,
    round_no   INTEGER NOT NULL,
    seq        BIGINT  NOT NULL CHECK (seq >= 0),
    seat       INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    FOREIGN KEY (table_id, round_no) REFERENCES rounds (table_id, round_no) ON DELETE CASCADE
);

-- The highest (round, seq) stored for the table, as round * 2^32 + seq, set by the group
-- commit's touch of the table after its actions: an action above it cannot be a
-- duplicate, so only one at or below it (written out of order, or twice) is looked for in
-- `actions` and the log. A group's own actions are checked against each other by the
-- store. `actions`' primary key still holds in the end: the fold inserts into it.
ALTER TABLE game_tables ADD COLUMN action_head INTEGER NOT NULL DEFAULT -1;
UPDATE game_tables SET action_head = COALESCE(
    (SELECT MAX(round_no * 4294967296 + seq) FROM actions WHERE actions.table_id = game_tables.id),
    -1);

CREATE TRIGGER action_log_unique BEFORE INSERT ON action_log
WHEN NEW.round_no * 4294967296 + NEW.seq
        <= (SELECT action_head FROM game_tables WHERE id = NEW.table_id)
    AND (EXISTS (SELECT 1 FROM actions
                 WHERE table_id = NEW.table_id AND round_no = NEW.round_no AND seq = NEW.seq)
         OR EXISTS (SELECT 1 FROM action_log
                    WHERE table_id = NEW.table_id AND round_no = NEW.round_no AND seq = NEW.seq))
BEGIN
    SELECT RAISE(ABORT, 'fib_duplicate_action: this round and sequence number of the table are already stored');
END;
