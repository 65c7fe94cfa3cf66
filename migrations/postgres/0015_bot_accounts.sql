-- Bot accounts (#31, docs/ratings.md "The bot pool"): a claimed player that has played no
-- match may become a bot account, for good. `bot_since` is when (NULL: a person).
ALTER TABLE players ADD COLUMN bot_since BIGINT;

-- A third pool per game, 'bots': every match with a bot account in it is rated there and
-- nowhere else.
ALTER TABLE player_ratings DROP CONSTRAINT player_ratings_pool_check;
ALTER TABLE player_ratings ADD CONSTRAINT player_ratings_pool_check
    CHECK (pool IN ('duel', 'multi', 'bots'));
ALTER TABLE rating_history DROP CONSTRAINT rating_history_pool_check;
ALTER TABLE rating_history ADD CONSTRAINT rating_history_pool_check
    CHECK (pool IN ('duel', 'multi', 'bots'));
