-- Initial schema, Postgres dialect.
--
-- The column types deliberately match the SQLite schema (ids as uuid TEXT, JSON as TEXT,
-- BIGINT Unix milliseconds) so that one SQL text and one row decoder serve both backends;
-- native UUID/JSONB columns would need casts SQLite does not understand. JSON is only
-- ever read back whole, never queried inside, so JSONB would buy nothing here.

CREATE TABLE players (
    id         TEXT   PRIMARY KEY,
    name       TEXT   NOT NULL,
    token_hash TEXT   NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE game_tables (
    id            TEXT    PRIMARY KEY,
    game          TEXT    NOT NULL,
    options       TEXT    NOT NULL,
    rules_version INTEGER NOT NULL,
    seat_count    INTEGER NOT NULL CHECK (seat_count > 0),
    private       BOOLEAN NOT NULL,
    invite_code   TEXT    UNIQUE,
    -- No foreign key: the creator may be a system identity rather than a stored player.
    created_by    TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    updated_at    BIGINT  NOT NULL,
    status        TEXT    NOT NULL
        CHECK (status IN ('open', 'playing', 'finished', 'abandoned'))
);
CREATE INDEX game_tables_by_status ON game_tables (status);
CREATE INDEX game_tables_by_game_status ON game_tables (game, status);

CREATE TABLE table_seats (
    table_id  TEXT    NOT NULL REFERENCES game_tables (id) ON DELETE CASCADE,
    seat      INTEGER NOT NULL CHECK (seat >= 0),
    kind      TEXT    NOT NULL CHECK (kind IN ('empty', 'player', 'bot')),
    player_id TEXT    REFERENCES players (id),
    name      TEXT,
    bot_level TEXT,
    score     BIGINT  NOT NULL DEFAULT 0,
    won       BOOLEAN,
    PRIMARY KEY (table_id, seat),
    CHECK (kind <> 'player' OR (player_id IS NOT NULL AND name IS NOT NULL)),
    CHECK (kind <> 'bot' OR bot_level IS NOT NULL)
);
CREATE INDEX table_seats_by_player ON table_seats (player_id);

CREATE TABLE rounds (
    table_id   TEXT    NOT NULL REFERENCES game_tables (id) ON DELETE CASCADE,
    round_no   INTEGER NOT NULL,
    seed_hex   TEXT    NOT NULL,
    commitment TEXT    NOT NULL,
    started_at BIGINT  NOT NULL,
    ended_at   BIGINT,
    result     TEXT,
    PRIMARY KEY (table_id, round_no)
);

CREATE TABLE actions (
    table_id   TEXT    NOT NULL,
    round_no   INTEGER NOT NULL,
    seq        BIGINT  NOT NULL CHECK (seq >= 0),
    seat       INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (table_id, round_no, seq),
    FOREIGN KEY (table_id, round_no) REFERENCES rounds (table_id, round_no) ON DELETE CASCADE
);
