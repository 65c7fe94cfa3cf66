-- Ratings: one Elo number per player and game (see crates/store/src/rating.rs), updated in
-- the transaction that finishes a match between people. Matches finished before this
-- migration are not rated (everybody starts at 1500 from here).
CREATE TABLE ratings (
    player_id  TEXT   NOT NULL REFERENCES players (id),
    game       TEXT   NOT NULL,
    rating     DOUBLE PRECISION NOT NULL,
    matches    BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (player_id, game)
) WITHOUT ROWID;
CREATE INDEX ratings_by_game ON ratings (game, rating);
