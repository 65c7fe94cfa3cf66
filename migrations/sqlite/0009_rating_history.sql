-- Each person's rating after each rated match (crates/store/src/rating.rs, docs/ratings.md),
-- for the chart on a player's profile. Written in the same transaction as the update of
-- player_ratings, and rebuilt with it when matches are re-rated (rating version 3 fills it
-- from the stored history at the first start-up after this migration).
CREATE TABLE rating_history (
    player_id    TEXT   NOT NULL REFERENCES players (id),
    game         TEXT   NOT NULL,
    pool         TEXT   NOT NULL CHECK (pool IN ('duel', 'multi')),
    table_id     TEXT   NOT NULL REFERENCES game_tables (id),
    at           BIGINT NOT NULL,
    mu           DOUBLE PRECISION NOT NULL,
    sigma        DOUBLE PRECISION NOT NULL,
    conservative DOUBLE PRECISION NOT NULL,
    won          BOOLEAN NOT NULL,
    PRIMARY KEY (player_id, game, pool, table_id)
);
