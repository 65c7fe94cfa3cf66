-- Open tables per creator, for the cap on open tables per player (issue #12).
CREATE INDEX game_tables_by_creator_status ON game_tables (created_by, status);
