-- Online play (issue #12): a table's pace and its seats' time banks, and which seats
-- abandoned their match.
--
-- `pace` is the table's pace as JSON (protocol::Pace), chosen at creation; tables from
-- before this migration are untimed. `clock` holds the seats' time banks (JSON, ms),
-- written only when a bank changes: a move made within its per-move time writes nothing.
-- `abandoned` marks a seat whose player left and whose bot stand-in finished the match
-- for them (rated as a loss to everyone else).
ALTER TABLE game_tables ADD COLUMN pace TEXT NOT NULL DEFAULT '{"kind":"untimed"}';
ALTER TABLE game_tables ADD COLUMN clock TEXT;
ALTER TABLE table_seats ADD COLUMN abandoned BOOLEAN NOT NULL DEFAULT FALSE;
