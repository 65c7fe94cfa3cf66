-- Initial schema, SQLite dialect.
--
-- Ids are uuid strings (TEXT), JSON documents are TEXT, timestamps are BIGINT Unix
-- milliseconds: the Postgres schema uses the same column types so that one SQL text and
-- one row decoder serve both backends. Booleans are stored as 0/1 by SQLite.
-- The tables with a composite primary key are WITHOUT ROWID: their rows are then kept in
-- primary-key order, which is the order the log is read back in (table, round, seq).

CREATE TABLE players (
    id         TEXT   NOT NULL PRIMARY KEY,
    name       TEXT   NOT NULL,
    token_hash TEXT   NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE game_tables (
    id            TEXT    NOT NULL PRIMARY KEY,
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
) WITHOUT ROWID;
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
) WITHOUT ROWID;

CREATE TABLE actions (
    table_id   TEXT    NOT NULL,
    round_no   INTEGER NOT NULL,
    seq        BIGINT  NOT NULL CHECK (seq >= 0),
    seat       INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (table_id, round_no, seq),
    FOREIGN KEY (table_id, round_no) REFERENCES rounds (table_id, round_no) ON DELETE CASCADE
) WITHOUT ROWID;
