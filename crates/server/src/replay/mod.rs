//! Step replays of finished matches (`GET /api/tables/{id}/replay`). The match is rebuilt
//! from its stored seeds and action log by the rules crates, as a restore does, and
//! every seat's view is recorded after every step. Views are sent once in full and then as
//! JSON Patches per step (the same diff the live sockets use), which keeps a long match
//! small: the browser applies them forwards and keeps the documents to step back.
//!
//! Three parts: [`build`] makes a replay from the stored table; `verify` checks a
//! published replay the other way round, rebuilding the match from its seeds and actions
//! alone (`verify-match`); [`Cache`] keeps the replays built lately, as sent.

mod build;
mod cache;
mod verify;

pub use build::build;
pub use cache::{Access, Cache};
pub use verify::check_match;

#[cfg(test)]
mod tests;
