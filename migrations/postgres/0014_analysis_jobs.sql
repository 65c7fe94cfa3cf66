-- Analyses of finished matches (#32, docs/analysis.md): one row per requested analysis, a
-- bounded queue that any node's workers take jobs from. The job is its table's analysis
-- for one version of the engine (`version`): asked again, the stored result is served
-- instead of computing it again. A worker that takes a job holds it until `lease_until`
-- and renews that with every progress report; a job whose worker died (its lease ran out)
-- goes to the next worker that asks. `result` is the analysis as JSON text.
CREATE TABLE analysis_jobs (
    id           TEXT    PRIMARY KEY,
    table_id     TEXT    NOT NULL REFERENCES game_tables (id),
    version      BIGINT  NOT NULL,
    requested_by TEXT    NOT NULL REFERENCES players (id),
    state        TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    done         BIGINT  NOT NULL DEFAULT 0,
    total        BIGINT  NOT NULL DEFAULT 0,
    worker       TEXT,
    lease_until  BIGINT,
    result       TEXT,
    error        TEXT,
    created_at   BIGINT  NOT NULL,
    started_at   BIGINT,
    finished_at  BIGINT
);
CREATE UNIQUE INDEX analysis_jobs_by_table ON analysis_jobs (table_id, version);
CREATE INDEX analysis_jobs_by_state ON analysis_jobs (state, created_at);
CREATE INDEX analysis_jobs_by_player ON analysis_jobs (requested_by, created_at);
