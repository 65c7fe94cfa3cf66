-- Tables whose match changes no rating: an unrated challenge (docs/protocol.md §4.2). The
-- mark is written before the table is created, so its result is never rated.
CREATE TABLE unrated_tables (
    table_id   TEXT   NOT NULL PRIMARY KEY,
    created_at BIGINT NOT NULL
);
