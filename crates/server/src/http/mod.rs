//! The HTTP API, one module per resource: [`tables`] (tables and seats, fairness records),
//! [`players`] (guests, sessions, profiles), [`accounts`] (usernames, passwords, devices),
//! [`daily`] (the daily deal), [`boards`] (leaderboards, ratings, records), [`ops`]
//! (health, metrics), [`analysis`] (match analyses), [`pages`] (the client's pages and its security headers). Bodies are
//! the `protocol` crate's types; every error is an [`ApiError`] with a JSON
//! [`protocol::ErrorBody`]. The router that joins them is in `lib.rs`.

pub mod accounts;
pub mod analysis;
pub mod boards;
pub mod daily;
pub mod ops;
pub mod pages;
pub mod players;
pub mod tables;
pub mod tournaments;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ApiError;
use crate::limits::Class;
use crate::state::AppState;

/// Middleware: limits a route by `class`, keyed by the client's address.
pub async fn limit(
    State((app, class)): State<(AppState, Class)>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let client = app.limits.client(peer, req.headers());
    if let Err(e) = app.limits.check(class, client) {
        app.metrics.limited(class.as_str());
        return Err(e);
    }
    Ok(next.run(req).await)
}
