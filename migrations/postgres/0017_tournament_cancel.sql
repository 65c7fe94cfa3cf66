-- A tournament cancelled before it started (#31, docs/tournaments.md "Cancelled"): the
-- reason (`creator`, `too_few_players`, `expired`), its status then `finished` (the
-- director stops; no step is stored over it). NULL: not cancelled.
ALTER TABLE tournaments ADD COLUMN cancelled TEXT;
