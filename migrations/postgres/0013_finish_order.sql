-- The order in which the store finished, and so rated, the matches (docs/ratings.md). A
-- match gets the next number of `finish_order` in the transaction that finishes it, after
-- that transaction has locked its players' ratings (FOR UPDATE): a match that waited for
-- another's ratings draws its number after that one committed, so the numbers follow the
-- order the ratings were applied in, also for matches finished in the same millisecond.
-- The rating history is read in this order and re-rating replays it. Numbers taken by a
-- transaction that rolled back are skipped, which leaves gaps but keeps the order.
ALTER TABLE game_tables ADD COLUMN finish_seq BIGINT;
CREATE SEQUENCE finish_order AS BIGINT;

-- Matches finished before this migration: numbered in the order re-rating replayed them
-- until now (finish time, then table id). Rating version 4 re-rates them in that order at
-- the next start-up, so ratings and history agree with it.
UPDATE game_tables SET finish_seq = o.n
FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY finished_at, id) AS n
      FROM game_tables WHERE status = 'finished' AND finished_at IS NOT NULL) AS o
WHERE game_tables.id = o.id;
SELECT setval('finish_order', (SELECT COALESCE(MAX(finish_seq), 0) + 1 FROM game_tables), false);

CREATE UNIQUE INDEX game_tables_by_finish_seq ON game_tables (finish_seq);
