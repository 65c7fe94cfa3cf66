-- The action log in two parts (docs/performance.md, issue #30): a commit used to write
-- one 4 KiB page per action, because each table's actions are clustered by table and
-- each table has one action in flight, so a group of N actions touched N pages. Now an
-- accepted action is appended to `action_journal` (a rowid table: a group's rows share a
-- few pages at its end), and the store's folder moves the journal into `action_log`, the
-- clustered log, many actions per table at once, when the journal is long or old.
--
-- `actions` stays what it always was to readers: every stored action, now the union of
-- both parts. Writing into it goes through the trigger below, which refuses an action at
-- or before its table's head (what the primary key refused before) and appends it to the
-- journal.
ALTER TABLE actions RENAME TO action_log;

CREATE TABLE action_journal (
    table_id   TEXT    NOT NULL,
    round_no   INTEGER NOT NULL,
    seq        BIGINT  NOT NULL CHECK (seq >= 0),
    seat       INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    FOREIGN KEY (table_id, round_no) REFERENCES rounds (table_id, round_no) ON DELETE CASCADE
);

-- The newest (round, seq) stored for each table, and its time: narrow rows, so that a
-- group's checks and updates touch few pages. A table's actions are appended in order (a
-- round after the round before it), so "not after the head" is "a duplicate" or "out of
-- order", both refused. `at` is the time of that action: a table's `updated_at` as the
-- store reads it is the later of its column and this (a group of actions alone no longer
-- writes `game_tables`, whose wide rows would put a page per few tables in every commit).
CREATE TABLE action_heads (
    table_id TEXT    NOT NULL PRIMARY KEY REFERENCES game_tables (id) ON DELETE CASCADE,
    round_no INTEGER NOT NULL,
    seq      BIGINT  NOT NULL,
    at       BIGINT  NOT NULL
) WITHOUT ROWID;

INSERT INTO action_heads (table_id, round_no, seq, at)
SELECT a.table_id, a.round_no, MAX(a.seq), MAX(a.created_at) FROM action_log a
WHERE a.round_no = (SELECT MAX(b.round_no) FROM action_log b WHERE b.table_id = a.table_id)
GROUP BY a.table_id, a.round_no;

CREATE VIEW actions (table_id, round_no, seq, seat, action, created_at) AS
SELECT table_id, round_no, seq, seat, action, created_at FROM action_log
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
