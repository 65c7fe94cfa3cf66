//! Nothing here: the end-to-end suite is `e2e/`, and `bin/server.rs` is the server binary it runs.
