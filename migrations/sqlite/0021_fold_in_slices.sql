-- A fold of the action journal in slices (docs/performance.md, issue #30). A fold used to
-- be one transaction: 5,000 tables' chunks in, 64k journal rows out, holding the write
-- lock 55-70 ms while every move waited behind it. Now its chunks go in a few ms at a
-- time, invisible to readers; one small transaction makes them visible and hides the
-- journal rows they hold, both at once; then the hidden rows leave the journal, a few
-- thousand at a time. Between any two of those transactions the writer's groups go on.
--
-- What readers see is set by one row:
--   `chunks_upto`:  chunks with a rowid up to it are visible; later ones are a fold's,
--                   not yet made visible (or left by a crash, removed by the next fold).
--   `journal_upto`: journal rows with an id up to it are folded (their chunks visible)
--                   and wait to be removed; later ones are visible.
CREATE TABLE fold_state (
    one          INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
    chunks_upto  INTEGER NOT NULL,
    journal_upto INTEGER NOT NULL
);

INSERT INTO fold_state (one, chunks_upto, journal_upto)
VALUES (1, COALESCE((SELECT MAX(rowid) FROM action_chunks), 0), 0);

-- The journal again, its ids never reused (AUTOINCREMENT): an id at or below
-- `journal_upto` must never be given to a new row, even once the journal was emptied.
-- Dropping the view drops its trigger: both come back below.
DROP VIEW actions;

CREATE TABLE action_journal_ids (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    table_id   TEXT    NOT NULL,
    round_no   INTEGER NOT NULL,
    seq        BIGINT  NOT NULL CHECK (seq >= 0),
    seat       INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    FOREIGN KEY (table_id, round_no) REFERENCES rounds (table_id, round_no) ON DELETE CASCADE
);

INSERT INTO action_journal_ids (id, table_id, round_no, seq, seat, action, created_at)
SELECT rowid, table_id, round_no, seq, seat, action, created_at FROM action_journal
ORDER BY rowid;

DROP TABLE action_journal;

ALTER TABLE action_journal_ids RENAME TO action_journal;

CREATE VIEW actions (table_id, round_no, seq, seat, action, created_at) AS
SELECT table_id, round_no, seq, seat, action, created_at FROM action_log
UNION ALL
SELECT c.table_id, c.round_no, e.value ->> 0, e.value ->> 1, e.value -> 3, e.value ->> 2
FROM action_chunks c, json_each(c.actions) e
WHERE c.rowid <= (SELECT chunks_upto FROM fold_state)
UNION ALL
SELECT table_id, round_no, seq, seat, action, created_at FROM action_journal
WHERE id > (SELECT journal_upto FROM fold_state);

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
