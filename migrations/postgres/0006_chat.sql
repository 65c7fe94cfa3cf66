-- Table chat, stored with the match, and each player's muted players.
--
-- A line is a text or a quick reaction (exactly one of the two). Every sender is a
-- signed-in player; `spectator` says they held no seat at the table when they spoke (such
-- lines reach the players only once the match is over). `seq` is the table's chat line
-- number, kept apart from the action log. Lobby chat is not stored.
CREATE TABLE chat_lines (
    table_id   TEXT    NOT NULL REFERENCES game_tables (id) ON DELETE CASCADE,
    seq        BIGINT  NOT NULL CHECK (seq > 0),
    player_id  TEXT    NOT NULL REFERENCES players (id),
    name       TEXT    NOT NULL,
    spectator  BOOLEAN NOT NULL,
    text       TEXT,
    emote      TEXT,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (table_id, seq),
    CHECK ((text IS NULL) <> (emote IS NULL))
);
-- The history a reader gets: the latest lines of one kind (players' or spectators').
CREATE INDEX chat_lines_by_kind ON chat_lines (table_id, spectator, seq);

-- `player_id` does not see `muted_id`'s chat lines or reactions, anywhere.
CREATE TABLE chat_mutes (
    player_id  TEXT   NOT NULL REFERENCES players (id),
    muted_id   TEXT   NOT NULL REFERENCES players (id),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (player_id, muted_id),
    CHECK (player_id <> muted_id)
);
