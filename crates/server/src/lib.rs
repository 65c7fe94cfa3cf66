//! The fibonacci-cards server as a library, so tests can run it in-process on port 0.
//!
//! [`build`] connects the store and applies migrations; [`app`] is the router; [`serve`]
//! joins the cluster (`cluster::start`: the node brings back every unfinished table no
//! other node runs), runs the router on a listener until shutdown, and then hands its
//! tables over (`cluster::drain`). Only this crate speaks HTTP and WebSocket.

pub mod assets;
pub mod auth;
pub mod cli;
pub mod cluster;
pub mod config;
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
        .layer(axum::middleware::map_response(error::json_rejections))
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

/// Serves until `shutdown` resolves, then closes every socket, ends every table task and
/// returns: the store may then be closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let local = listener.local_addr()?;
    if let Err(e) = cluster::start(&state, local).await {
        // What it started (lease beats, tables taken back) stops before the store closes.
        state.shutdown.send_replace(true);
        wind_down(&state).await;
        return Err(std::io::Error::other(format!(
            "cannot join the cluster: {e}"
        )));
    }
    let router = app(state.clone());
    let closer = state.clone();
    // Small frames must not wait for Nagle's algorithm: a move is a few hundred bytes,
    // and without TCP_NODELAY it sat tens of ms in the kernel.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    /// What the log wrote, as the binary's text format writes it.
    #[derive(Clone, Default)]
    struct Logged(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Logged {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Issue #33, item 7: a request answered `503 table_moving` (here: the node is
    /// draining, so it takes no table) is logged as what it is, at info with the table, and
    /// not as a failure of the server. tower-http's request log counted every 5xx as one
    /// and logged `ERROR … 503 Service Unavailable` for each request of a failover.
    /// Every task here runs on the test's one thread, so the log set for it sees them all.
    #[tokio::test]
    async fn a_table_moving_answer_is_logged_at_info_with_its_table_not_as_an_error() {
        let logged = Logged::default();
        let log = tracing_subscriber::fmt()
            .with_writer({
                let logged = logged.clone();
                move || logged.clone()
            })
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        let _log = tracing::subscriber::set_default(log);

        let dir = std::env::temp_dir().join(format!("fib-lib-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/fib.db", dir.display());
        let app = crate::build(crate::Config::for_tests(&url)).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(crate::serve(listener, app.clone(), async move {
            let _ = stopped.await;
        }));
        let http = reqwest::Client::new();
        let guest: serde_json::Value = http
            .post(format!("{base}/api/guest"))
            .json(&serde_json::json!({"name": "Ada"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let token = guest["token"].as_str().unwrap();
        let created: serde_json::Value = http
            .post(format!("{base}/api/tables"))
            .bearer_auth(token)
            .json(&serde_json::json!({"game": "trump", "seats": 2}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let table = created["table"]["id"].as_str().unwrap().to_string();

        // The node drains: its table stops, and a request for it is told to try again.
        crate::cluster::stop_tables(&app).await;
        let res = http
            .get(format!("{base}/api/tables/{table}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 503);
        assert!(res.headers().contains_key("retry-after"));
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["code"], "table_moving", "{body}");

        let _ = stop.send(());
        served.await.unwrap().unwrap();
        app.store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
        let text = String::from_utf8(logged.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.lines()
                .any(|l| l.contains(" INFO ") && l.contains("table_moving") && l.contains(&table)),
            "logged at info with its table:\n{text}"
        );
        assert!(
            !text.lines().any(|l| l.contains(" ERROR ")),
            "nothing for an operator to act on:\n{text}"
        );
    }
}
