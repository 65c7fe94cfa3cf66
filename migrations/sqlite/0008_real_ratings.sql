-- Real ratings (crates/store/src/rating.rs, docs/ratings.md): per player, game and pool
-- ("duel": Glicko-2 between two people; "multi": Weng-Lin among three to five), replacing
-- the pairwise Elo numbers of 0004. The new rows are not filled here: the store re-rates
-- every finished match from the stored history at start-up (the `rating_version` marker
-- in `store_meta` says whether that is needed), since a migration cannot run Rust.
CREATE TABLE player_ratings (
    player_id    TEXT   NOT NULL REFERENCES players (id),
    game         TEXT   NOT NULL,
    pool         TEXT   NOT NULL CHECK (pool IN ('duel', 'multi')),
    mu           DOUBLE PRECISION NOT NULL,
    sigma        DOUBLE PRECISION NOT NULL,
    volatility   DOUBLE PRECISION NOT NULL,
    -- mu - 3 sigma, the leaderboard's order, stored so that an index serves it.
    conservative DOUBLE PRECISION NOT NULL,
    matches      BIGINT NOT NULL,
    wins         BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (player_id, game, pool)
) WITHOUT ROWID;
CREATE INDEX player_ratings_board ON player_ratings (game, pool, conservative);

-- The Elo numbers derive from the history that re-rating replays: nothing is lost.
DROP TABLE ratings;

-- Small facts of the store itself, such as `rating_version`.
CREATE TABLE store_meta (
    key   TEXT   NOT NULL PRIMARY KEY,
    value BIGINT NOT NULL
);

-- When a match finished: the order in which matches are re-rated. Before this migration a
-- finished table's `updated_at` was its finish time (nothing touches it afterwards).
ALTER TABLE game_tables ADD COLUMN finished_at BIGINT;
UPDATE game_tables SET finished_at = updated_at WHERE status = 'finished';

-- One daily game per player and deal. A race of two requests could store two before this
-- index; the later ones are kept (nothing is deleted) but renamed out of the deal, so
-- they no longer count on its board.
UPDATE game_tables SET daily = daily || '#duplicate-' || id
WHERE daily IS NOT NULL AND EXISTS (
    SELECT 1 FROM game_tables o
    WHERE o.daily = game_tables.daily AND o.created_by = game_tables.created_by
      AND (o.created_at < game_tables.created_at
           OR (o.created_at = game_tables.created_at AND o.id < game_tables.id)));
CREATE UNIQUE INDEX game_tables_one_daily ON game_tables (daily, created_by)
    WHERE daily IS NOT NULL;
