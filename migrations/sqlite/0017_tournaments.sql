-- Tournaments run by the server (#31, docs/tournaments.md "Playing one on this server").
--
-- One row per tournament: its settings (`config`, JSON: the engine's config and the
-- server's: pace, options, privacy, bots, start rule), the pure engine's whole state as
-- JSON (`state`, crates/tournament), and `version`, raised by every stored step: a step is
-- written only over the version it was computed from (optimistic concurrency), so two
-- writers never both apply an input. The node that directs it (`owner`) claims it like a
-- table, raising `lease_epoch`; the director's steps are written only while it still holds
-- that epoch (fencing), so a node that lost it can never act for it again.
CREATE TABLE tournaments (
    id           TEXT    NOT NULL PRIMARY KEY,
    name         TEXT    NOT NULL,
    game         TEXT    NOT NULL,
    status       TEXT    NOT NULL
        CHECK (status IN ('registration', 'running', 'finished')),
    private      BOOLEAN NOT NULL,
    invite_code  TEXT    UNIQUE,
    rated        BOOLEAN NOT NULL,
    -- NULL: scheduled by the operator.
    created_by   TEXT    REFERENCES players (id),
    created_at   BIGINT  NOT NULL,
    -- When it starts (NULL: when enough players joined, per the config).
    starts_at    BIGINT,
    config       TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    version      BIGINT  NOT NULL DEFAULT 0,
    -- A recurring event's occurrence ("hourly-trump@<start ms>"): created once.
    schedule_key TEXT    UNIQUE,
    owner        TEXT,
    lease_epoch  BIGINT  NOT NULL DEFAULT 0,
    updated_at   BIGINT  NOT NULL
);
CREATE INDEX tournaments_by_status ON tournaments (status, created_at);

-- The engine's tables (numbered from 0 per tournament) and the real tables they are. A row
-- is written in the same transaction as the step that paired it, with the real table's id
-- chosen then, before the table exists: the director creates the table under that id
-- afterwards, and after a crash creates the ones still missing (never twice).
CREATE TABLE tournament_tables (
    tournament_id TEXT    NOT NULL REFERENCES tournaments (id),
    engine_table  BIGINT  NOT NULL,
    table_id      TEXT    NOT NULL UNIQUE,
    round         INTEGER NOT NULL,
    PRIMARY KEY (tournament_id, engine_table)
);
