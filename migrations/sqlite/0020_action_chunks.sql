-- The fold of the action journal writes one row per table and round (a chunk of its
-- actions) instead of one row per action (docs/performance.md, issue #30). Folding into
-- `action_log`, clustered by table, cost a b-tree insert per action under the write lock,
-- about as much as accepting the action; a chunk costs one insert, at the table's end
-- (a rowid table: the chunks of a fold are written one after the other), and one entry in
-- the index by table.
--
-- `actions`, as readers see it, is still every stored action: the rows of `action_log`
-- (folded before this migration), those of the chunks, and the journal's.
CREATE TABLE action_chunks (
    table_id  TEXT    NOT NULL,
    round_no  INTEGER NOT NULL,
    first_seq BIGINT  NOT NULL,
    -- A JSON array of `[seq, seat, created_at, action]`, in seq order.
    actions   TEXT    NOT NULL,
    FOREIGN KEY (table_id, round_no) REFERENCES rounds (table_id, round_no) ON DELETE CASCADE
);

-- Not unique: a chunk that collided (which the heads make impossible) must neither stop
-- every later fold nor lose its actions.
CREATE INDEX action_chunks_by_table ON action_chunks (table_id, round_no, first_seq);

-- Dropping the view drops its trigger: both come back as in migration 0014, the view
-- with the chunks' actions.
DROP VIEW actions;

CREATE VIEW actions (table_id, round_no, seq, seat, action, created_at) AS
SELECT table_id, round_no, seq, seat, action, created_at FROM action_log
UNION ALL
SELECT c.table_id, c.round_no, e.value ->> 0, e.value ->> 1, e.value -> 3, e.value ->> 2
FROM action_chunks c, json_each(c.actions) e
UNION ALL
SELECT table_id, round_no, seq, seat, action, created_at FROM action_journal;

CREATE TRIGGER actions_append INSTEAD OF INSERT ON actions
BEGIN
    SELECT RAISE(ABORT, 'fib: duplicate action (table_id, round_no, seq)')
    WHERE EXISTS (SELECT 1 FROM action_heads h WHERE h.table_id = NEW.table_id
                  AND (h.round_no, h.seq) >= (NEW.round_no, NEW.seq));
    INSERT INTO action_journal (table_id, round_no, seq, seat, action, created_at)
    VALUES (NEW.table_id, NEW.round_no, NEW.seq, NEW.seat, NEW.action, NEW.created_at);
    INSERT INTO action_heads (table_id, round_no, seq, at)
    VALUES (NEW.table_id, NEW.round_no, NEW.seq, NEW.created_at)
    ON CONFLICT (table_id) DO UPDATE
    SET round_no = excluded.round_no, seq = excluded.seq, at = excluded.at;
END;
