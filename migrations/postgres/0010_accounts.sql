-- Accounts and devices (crates/server/src/account.rs, docs/protocol.md §2.1a).
--
-- A player is signed in on a device by a session: an opaque token whose SHA-256 is kept
-- here. Every request and socket looks its token up in this table, so deleting a row
-- signs that device out at once. Each existing guest's token becomes its first session;
-- players.token_hash stays as the guest's first token (it is no longer looked up).
CREATE TABLE player_sessions (
    -- A public, opaque id for the device list (32 hex digits); never the token.
    id           TEXT   NOT NULL PRIMARY KEY,
    player_id    TEXT   NOT NULL REFERENCES players (id),
    token_hash   TEXT   NOT NULL UNIQUE,
    -- What the device said it was (its User-Agent, shortened) when the session began.
    label        TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    -- Refreshed at most every few minutes, not on every request.
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX player_sessions_by_player ON player_sessions (player_id);

INSERT INTO player_sessions (id, player_id, token_hash, label, created_at, last_seen_at)
SELECT md5(random()::text || token_hash), id, token_hash, 'first device', created_at, created_at FROM players;

-- A claimed player: a username and an argon2id password hash (PHC string). The username
-- is shown as typed; username_key (NFKC, lower case) is what must be unique, so "Ada" and
-- "ada" cannot both exist.
CREATE TABLE accounts (
    player_id     TEXT   NOT NULL PRIMARY KEY REFERENCES players (id),
    username      TEXT   NOT NULL,
    username_key  TEXT   NOT NULL UNIQUE,
    password_hash TEXT   NOT NULL,
    created_at    BIGINT NOT NULL
);
