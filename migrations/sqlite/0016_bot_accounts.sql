-- Bot accounts (#31, docs/ratings.md "The bot pool"): a claimed player that has played no
-- match may become a bot account, for good. `bot_since` is when (NULL: a person).
ALTER TABLE players ADD COLUMN bot_since BIGINT;

-- A third pool per game, 'bots': every match with a bot account in it is rated there and
-- nowhere else. SQLite cannot change a CHECK in place: both tables are rebuilt, rows kept.
CREATE TABLE player_ratings_new (
    player_id    TEXT   NOT NULL REFERENCES players (id),
    game         TEXT   NOT NULL,
    pool         TEXT   NOT NULL CHECK (pool IN ('duel', 'multi', 'bots')),
    mu           DOUBLE PRECISION NOT NULL,
    sigma        DOUBLE PRECISION NOT NULL,
    volatility   DOUBLE PRECISION NOT NULL,
    conservative DOUBLE PRECISION NOT NULL,
    matches      BIGINT NOT NULL,
    wins         BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (player_id, game, pool)
) WITHOUT ROWID;
INSERT INTO player_ratings_new SELECT player_id, game, pool, mu, sigma, volatility,
    conservative, matches, wins, updated_at FROM player_ratings;
DROP TABLE player_ratings;
ALTER TABLE player_ratings_new RENAME TO player_ratings;
CREATE INDEX player_ratings_board ON player_ratings (game, pool, conservative);

CREATE TABLE rating_history_new (
    player_id    TEXT   NOT NULL REFERENCES players (id),
    game         TEXT   NOT NULL,
    pool         TEXT   NOT NULL CHECK (pool IN ('duel', 'multi', 'bots')),
    table_id     TEXT   NOT NULL REFERENCES game_tables (id),
    at           BIGINT NOT NULL,
    mu           DOUBLE PRECISION NOT NULL,
    sigma        DOUBLE PRECISION NOT NULL,
    conservative DOUBLE PRECISION NOT NULL,
    won          BOOLEAN NOT NULL,
    PRIMARY KEY (player_id, game, pool, table_id)
);
INSERT INTO rating_history_new SELECT player_id, game, pool, table_id, at, mu, sigma,
    conservative, won FROM rating_history;
DROP TABLE rating_history;
ALTER TABLE rating_history_new RENAME TO rating_history;
