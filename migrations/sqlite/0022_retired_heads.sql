-- A finished table's head leaves `action_heads` (docs/performance.md, issue #30).
--
-- Heads were kept for every table ever played. Their keys are random table ids, so the
-- few tables in play sat among all the finished ones, each on a page of its own: after a
-- thousand finished matches a group of 17 actions wrote 10-12 pages of heads to the WAL,
-- where it had written one or two. Now the step that finishes a table (or abandons it)
-- folds its head's time into `game_tables.updated_at` and deletes the head, in its
-- transaction, so the heads are those of the tables in play and stay a few pages.
--
-- The head goes after the group's actions (the finishing move among them), which find
-- it. A finished table then has no head to refuse a duplicate of its actions (a group
-- retried after a commit whose outcome was lost), so the `actions` trigger, and the
-- store's own writes (`sqlite/raw.rs`), refuse an action of a finished or abandoned table
-- that has no head: no action may follow the end of a match.
UPDATE game_tables
SET updated_at = MAX(updated_at, COALESCE((SELECT h.at FROM action_heads h
                                          WHERE h.table_id = game_tables.id), updated_at))
WHERE status IN ('finished', 'abandoned');

DELETE FROM action_heads
WHERE table_id IN (SELECT id FROM game_tables WHERE status IN ('finished', 'abandoned'));

-- Dropping the view drops its trigger: both come back as in migration 0021, the trigger
-- with the refusal above.
DROP VIEW actions;

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
    SELECT RAISE(ABORT, 'fib: duplicate action (the table has ended)')
    WHERE NOT EXISTS (SELECT 1 FROM action_heads h WHERE h.table_id = NEW.table_id)
      AND EXISTS (SELECT 1 FROM game_tables t WHERE t.id = NEW.table_id
                  AND t.status IN ('finished', 'abandoned'));
    INSERT INTO action_journal (table_id, round_no, seq, seat, action, created_at)
    VALUES (NEW.table_id, NEW.round_no, NEW.seq, NEW.seat, NEW.action, NEW.created_at);
    INSERT INTO action_heads (table_id, round_no, seq, at)
    VALUES (NEW.table_id, NEW.round_no, NEW.seq, NEW.created_at)
    ON CONFLICT (table_id) DO UPDATE
    SET round_no = excluded.round_no, seq = excluded.seq, at = excluded.at;
END;
