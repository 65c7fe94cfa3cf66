-- Daily deals: one seed per key (e.g. `solitaire-21/2026-11-22`) that everybody plays that
-- day. The first request of the day stores it; later ones read it.
CREATE TABLE daily_deals (
    key        TEXT   NOT NULL PRIMARY KEY,
    seed_hex   TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

-- The daily deal a table plays, if any.
ALTER TABLE game_tables ADD COLUMN daily TEXT;
CREATE INDEX game_tables_by_daily ON game_tables (daily);
