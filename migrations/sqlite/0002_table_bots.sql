-- The bot level that fills a table's empty seats when its match starts (NULL: no bots).
ALTER TABLE game_tables ADD COLUMN bots TEXT;
