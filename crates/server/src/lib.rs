//! The fibonacci-cards server as a library, so tests can run it in-process on port 0.
//!
//! [`build`] connects the store and applies migrations; [`app`] is the router; [`serve`]
//! joins the cluster (`cluster::start`: the node brings back every unfinished table no
//! other node runs), runs the router on a listener until shutdown, and then hands its
//! tables over (`cluster::drain`). Only this crate speaks HTTP and WebSocket.

pub mod analysis;
pub mod assets;
pub mod auth;
pub mod challenges;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod conns;
pub mod error;
pub mod extract;
pub mod http;
pub mod limits;
pub mod lobby;
pub mod matcher;
pub mod node;
pub mod openapi;
pub mod quickplay;
pub mod replay;
pub mod state;
pub mod tournaments;
pub mod wire;
pub mod ws;

// The real-time core, under the names the server's modules use.
pub use realtime::{metrics, outbox, table};

use std::future::Future;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tower_http::classify::SharedClassifier;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;

pub use config::Config;
pub use state::AppState;

/// Connects the store (applying migrations). The tables come back, and quick play starts,
/// when the node joins the cluster, in [`serve`].
pub async fn build(config: Config) -> Result<AppState, store::StoreError> {
    let store = store::connect(&config.database_url).await?;
    let app = AppState::new(store, config);
    tracing::info!(database = app.store.backend(), node = %app.cluster.node, "store ready");
    Ok(app)
}

/// The router: the API, the WebSockets, and the browser client from `web/`.
pub fn app(state: AppState) -> Router {
    // The client routes with the URL's fragment (`/#/table/…`), so every page is `/`; an
    // unknown file is a 404 (a short page pointing to the lobby) rather than the index
    // page in disguise.
    let client = ServeDir::new(&state.config.web_dir).not_found_service(
        axum::handler::HandlerWithoutStateExt::into_service(http::pages::not_found_page),
    );
    // A versioned URL is answered with the bytes its version was made from
    // (`http::pages::versioned_file`); anything else from the folder as it is.
    let client =
        Router::new()
            .fallback_service(client)
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                http::pages::versioned_file,
            ));
    use axum::handler::Handler;
    use limits::Class;
    // A route limited per client address (`limits`).
    let limited =
        |class: Class| axum::middleware::from_fn_with_state((state.clone(), class), http::limit);
    let api = Router::new()
        .route(
            "/guest",
            post(http::players::create_guest).layer(limited(Class::Guest)),
        )
        .route("/me", get(http::players::me))
        .route("/account", get(http::accounts::account))
        .route("/account/claim", post(http::accounts::claim))
        .route(
            "/account/signin",
            post(http::accounts::sign_in).layer(limited(Class::SignIn)),
        )
        .route("/account/signout", post(http::accounts::sign_out))
        .route("/account/devices", get(http::accounts::devices))
        .route("/account/bot", post(http::accounts::make_bot))
        .route("/account/bot/token", post(http::accounts::bot_token))
        .route(
            "/account/bot/token/{id}",
            axum::routing::delete(http::accounts::revoke_bot_token),
        )
        .route(
            "/account/devices/{id}",
            axum::routing::delete(http::accounts::revoke_device),
        )
        .route("/players/{id}", get(http::players::player_profile))
        .route("/players/{id}/matches", get(http::players::player_matches))
        .route("/session", get(http::players::session))
        .route("/me/matches", get(http::players::my_matches))
        .route("/games", get(http::tables::list_games))
        .route(
            "/tables",
            get(http::tables::list_tables)
                .post(http::tables::create_table.layer(limited(Class::CreateTable))),
        )
        .route("/tables/{id}", get(http::tables::get_table))
        .route("/tables/{id}/state", get(http::tables::get_table_state))
        .route(
            "/tables/{id}/join",
            post(http::tables::join_table).layer(limited(Class::Join)),
        )
        .route("/tables/{id}/leave", post(http::tables::leave_table))
        .route("/tables/{id}/start", post(http::tables::start_table))
        .route("/tables/{id}/bots", post(http::tables::seat_bot))
        .route("/tables/{id}/rounds", get(http::tables::table_rounds))
        .route("/tables/{id}/replay", get(http::tables::table_replay))
        .route(
            "/tables/{id}/analysis",
            get(http::analysis::get_analysis).post(http::analysis::request_analysis),
        )
        .route(
            "/tables/{id}/rounds/{round}/deal",
            get(http::tables::round_deal),
        )
        .route("/leaderboard/{game}", get(http::boards::leaderboard))
        .route("/records/{game}", get(http::boards::records))
        .route("/players/{id}/ratings", get(http::boards::player_ratings))
        .route(
            "/players/{id}/rating-history",
            get(http::boards::rating_history),
        )
        .route(
            "/tournaments",
            get(http::tournaments::list_tournaments)
                .post(http::tournaments::create_tournament.layer(limited(Class::CreateTable))),
        )
        .route("/tournaments/{id}", get(http::tournaments::get_tournament))
        .route(
            "/tournaments/{id}/join",
            post(http::tournaments::join_tournament).layer(limited(Class::Join)),
        )
        .route(
            "/tournaments/{id}/withdraw",
            post(http::tournaments::withdraw_tournament),
        )
        .route(
            "/tournaments/{id}/cancel",
            post(http::tournaments::cancel_tournament),
        )
        .route("/openapi.json", get(openapi::serve))
        .route(
            "/daily/solitaire",
            get(http::daily::daily_board)
                .post(http::daily::start_daily.layer(limited(Class::CreateTable))),
        );
    // Test hooks exist only when asked for (FIB_TEST_HOOKS): never on a real server.
    let api = if state.config.test_hooks {
        api.route("/tables/{id}/test/panic", post(http::ops::test_panic))
    } else {
        api
    }
    .fallback(extract::not_found_api);
    Router::new()
        .nest("/api", api)
        // `/api/` itself is no page of the browser client's either (`nest` leaves it out).
        .route_service(
            "/api/",
            axum::handler::HandlerWithoutStateExt::into_service(extract::not_found_api),
        )
        .route("/", get(http::pages::index))
        .route("/index.html", get(http::pages::index_html))
        .route("/table/{id}", get(http::pages::table_page))
        .route("/table/{id}/{invite}", get(http::pages::table_page_invite))
        .route("/healthz", get(http::ops::healthz))
        .route("/metrics", get(http::ops::metrics))
        .route("/ws/lobby", get(ws::lobby_socket))
        .route("/ws/table/{id}", get(ws::table_socket))
        .fallback_service(client)
        // The routes of one table go to its owner when another node runs it.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cluster::forward,
        ))
        // Every path, not only `/api`: a body announced over the limit is refused before
        // anything reads it (a page or `/healthz` takes none, and is not sent one).
        .layer(axum::middleware::from_fn(extract::refuse_large_bodies))
        .layer(axum::middleware::map_response(error::json_rejections))
        .layer(axum::middleware::map_response_with_state(
            state.clone(),
            http::ops::count_answer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::pages::headers,
        ))
        .layer(CompressionLayer::new())
        .layer(DefaultBodyLimit::max(protocol::MAX_HTTP_BODY))
        // 5xx answers are logged as failures, but for the expected "try again" ones.
        .layer(TraceLayer::new(SharedClassifier::new(
            error::RequestFailures,
        )))
        .with_state(state)
}

/// How long a connection may be silent before the kernel probes its peer
/// ([`watch_for_silent_peers`]).
pub const KEEPALIVE_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// A peer that vanishes without closing its connection (a phone that lost its network, a
/// laptop put to sleep, a NAT that forgot the flow) sends no FIN: its socket stayed
/// "connected" for ever, so its seat never got a stand-in nor its match an end (a soak
/// walk cut a client's link: still connected 48 minutes later). Keepalive probes after
/// [`KEEPALIVE_IDLE`] of silence, 10 s apart, and a 90 s limit on data the peer does not
/// acknowledge (`TCP_USER_TIMEOUT`, Linux) end such a connection within about 90 s; a
/// live peer's kernel answers the probes by itself, whatever its program does.
fn watch_for_silent_peers(tcp: &tokio::net::TcpStream) -> std::io::Result<()> {
    use std::time::Duration;
    let sock = socket2::SockRef::from(tcp);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(Duration::from_secs(10))
        .with_retries(3);
    sock.set_tcp_keepalive(&keepalive)?;
    #[cfg(target_os = "linux")]
    sock.set_tcp_user_timeout(Some(Duration::from_secs(90)))?;
    Ok(())
}

/// Serves until `shutdown` resolves, then closes every socket, ends every table task and
/// returns: the store may then be closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let local = listener.local_addr()?;
    // The bot accounts, so that their seats are marked from the first table restored.
    match state.store.bot_accounts().await {
        Ok(ids) => ids
            .into_iter()
            .for_each(|id| state.core.mark_bot_account(id)),
        Err(e) => tracing::warn!(error = %e, "cannot read the bot accounts"),
    }
    if let Err(e) = cluster::start(&state, local).await {
        // What it started (lease beats, tables taken back) stops before the store closes.
        state.shutdown.send_replace(true);
        wind_down(&state).await;
        return Err(std::io::Error::other(format!(
            "cannot join the cluster: {e}"
        )));
    }
    // Analyses run beside play, on this node's idle cycles (`analysis`).
    analysis::start(&state);
    let router = app(state.clone());
    let closer = state.clone();
    // Small frames must not wait for Nagle's algorithm: a move is a few hundred bytes,
    // and without TCP_NODELAY it sat tens of ms in the kernel.
    // Connections one address may hold, counted as they are accepted (`conns`).
    let cluster = state.cluster.clone();
    let metrics = state.metrics.clone();
    let listener = conns::Limited::new(
        listener,
        state.config.connections_per_address,
        state.config.trusted_proxies.clone(),
        move |ip| cluster.is_peer(ip),
        move || metrics.limited("connections"),
    );
    let listener = listener.tap_io(|counted| {
        let tcp = counted.get_ref();
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        if let Err(e) = watch_for_silent_peers(tcp) {
            tracing::debug!(error = %e, "could not set TCP keepalive");
        }
    });
    // The peer's address feeds the abuse limits (`limits`).
    let router = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: handing the tables over");
            // Still serving meanwhile: a client that reconnects is sent to the new owner.
            cluster::drain(&closer).await;
            closer.shutdown.send_replace(true);
        })
        .await;
    // Set already, unless serving failed.
    state.shutdown.send_replace(true);
    wind_down(&state).await;
    served
}

/// After the shutdown signal (`state.shutdown` set): waits for the sockets, then the
/// background tasks, then stops the tables and sends the last lobby notes, so that nothing
/// uses the store once this returns.
async fn wind_down(state: &AppState) {
    // Upgraded sockets are not connections axum's `serve` waits for: each sends its close
    // frame (1001) and ends, at once unless a write to a client that stopped reading is
    // under way, which times out (then so may the close frame).
    state.sockets.close();
    let sockets_end = 2 * ws::WRITE_TIMEOUT + std::time::Duration::from_secs(1);
    if tokio::time::timeout(sockets_end, state.sockets.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            sockets = state.sockets.len(),
            "sockets still open {} s after the shutdown",
            sockets_end.as_secs()
        );
    }
    // Then what runs beside them and uses the store (each ends on `shutdown`, after the
    // step it is on), then the tables (on Postgres, already handed over by `drain`): each
    // stores the move it is on and ends, and their last lobby notes go out, so that
    // nothing writes once the caller closes the store.
    state.background.close();
    if tokio::time::timeout(std::time::Duration::from_secs(10), state.background.wait())
        .await
        .is_err()
    {
        tracing::warn!("background tasks still running 10 s after the shutdown");
    }
    let stopped = cluster::stop_tables(state).await;
    if stopped > 0 {
        tracing::info!(tables = stopped, "tables stopped");
    }
    cluster::flush_notes(state).await;
}
