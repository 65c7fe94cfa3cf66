//! Several server nodes on one Postgres (`crates/server/src/cluster.rs`), with three
//! processes of the real binary: moves through any node, failover after SIGKILL with every
//! acknowledged move, a paused owner that wakes up unable to write, draining that hands a
//! table over, and the lobby and quick play across nodes. Postgres only: SQLite is one
//! node.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// Three nodes, `n1`, `n2`, `n3`, on one Postgres database. Bots wait 1.5 s before a
/// move while a person watches: a test can catch a table while a bot owes a move.
async fn three(db: &Db) -> Vec<Child> {
    let mut nodes = Vec::new();
    for id in ["n1", "n2", "n3"] {
        let extra = ["--bot-fill-s", "600", "--bot-delay-ms", "1500"];
        nodes.push(Child::start_as(db, id, &extra).await);
    }
    nodes
}

/// The owner node and fencing epoch of a table, as the database has them.
async fn owner_of(db: &Db, table: &str) -> (Option<String>, i64) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::query_as("SELECT owner, lease_epoch FROM game_tables WHERE id = $1")
        .bind(table)
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

/// Waits (up to `within`) until the table's owner is another node than `not`; the new
/// owner and epoch.
async fn owner_other_than(db: &Db, table: &str, not: &str, within: Duration) -> (String, i64) {
    let start = Instant::now();
    loop {
        let (owner, epoch) = owner_of(db, table).await;
        if let Some(o) = owner.filter(|o| o != not) {
            return (o, epoch);
        }
        assert!(start.elapsed() < within, "the table still belongs to {not}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A table socket of `p` through `node`, once the table is served again (a node answers
/// 503 `table_moving` while the table changes owners): the socket and its first state.
async fn reconnect(p: &Player, node: &Child, table: &str, within: Duration) -> (Sock, Value) {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let start = Instant::now();
    loop {
        let mut req = format!("{}/ws/table/{table}", node.ws)
            .into_client_request()
            .unwrap();
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {}", p.token).parse().unwrap(),
        );
        if let Ok((ws, _)) = tokio_tungstenite::connect_async(req).await {
            let mut sock = Sock::new(ws);
            let st = sock.next_state().await;
            return (sock, st);
        }
        assert!(
            start.elapsed() < within,
            "the table is not served again within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Plays `n` moves of a two-player table from the two players' sockets (whoever is on
/// turn); the version both hold afterwards.
async fn play(a: &mut Sock, b: &mut Sock, mut v: u64, n: usize) -> u64 {
    for _ in 0..n {
        let sa = a.until(|s| s["version"].as_u64().unwrap() >= v).await;
        let sb = b.until(|s| s["version"].as_u64().unwrap() >= v).await;
        let (sock, st) = if my_turn(&sa) {
            (&mut *a, sa)
        } else {
            (&mut *b, sb)
        };
        assert!(my_turn(&st), "one of the two is on turn: {st}");
        v = st["version"].as_u64().unwrap();
        sock.act(v, &st["legal"][0]).await;
        v = sock.until(|s| s["version"].as_u64().unwrap() > v).await["version"]
            .as_u64()
            .unwrap();
    }
    a.until(|s| s["version"].as_u64().unwrap() >= v).await;
    b.until(|s| s["version"].as_u64().unwrap() >= v).await;
    v
}

/// Ada (on `n1`) and Bob (on `n2`) at a started two-seat Trump table Ada created on `n1`,
/// which therefore owns it.
async fn table_on_n1(nodes: &[Child]) -> (Player, Player, String) {
    let ada = Player::guest(&nodes[0].base, &nodes[0].ws, "Ada").await;
    let bob = Player::guest(&nodes[1].base, &nodes[1].ws, "Bob").await;
    let table = ada.create_trump(2, false).await;
    // Joined through n2 and started through n3: both forwarded to n1.
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = ada
        .at(&nodes[2].base, &nodes[2].ws)
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    (ada, bob, table)
}

/// The value of `fib_cluster_events_total{event="…"}` on a node.
async fn cluster_event(node: &Child, event: &str) -> u64 {
    let text = node.metrics().await;
    let key = format!("fib_cluster_events_total{{event=\"{event}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// What a player's state says of the match, without what depends on the connection
/// (version, presence, who is connected).
fn game_of(st: &Value) -> Value {
    json!({
        "view": st["view"],
        "legal": st["legal"],
        "round": st["table"]["round"],
        "to_act": st["table"]["to_act"],
        "scores": st["table"]["scores"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_through_any_node_and_failover_after_sigkill() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let mut nodes = three(&db).await;
    let (ada, bob, table) = table_on_n1(&nodes).await;
    assert_eq!(owner_of(&db, &table).await, (Some("n1".into()), 1));
    // The table's first socket reaches n2, where nobody is connected to it on n1: n2 takes
    // the table over (with nginx's hash on the table id, the node its sockets reach).
    let mut a = ada.at(&nodes[1].base, &nodes[1].ws).connect(&table).await;
    let v = a.next_state().await["version"].as_u64().unwrap();
    assert_eq!(owner_of(&db, &table).await, (Some("n2".into()), 2));
    assert_eq!(cluster_event(&nodes[1], "adopted").await, 1);
    assert!(v >= 2 << 32, "versions count from the epoch: {v}");
    // Bob plays through n3, which forwards his socket to n2 (Ada is connected there).
    let mut b = bob.at(&nodes[2].base, &nodes[2].ws).connect(&table).await;
    let v = play(&mut a, &mut b, v, 6).await;
    assert_eq!(owner_of(&db, &table).await.0.as_deref(), Some("n2"));
    assert!(cluster_event(&nodes[2], "forwarded_ws").await >= 1);
    // The lobby of a node that does not run the table lists it.
    let start = Instant::now();
    loop {
        let (s, list) = ada.get("/api/tables").await;
        assert_eq!(s, 200);
        if list
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["id"] == table.as_str()))
        {
            break;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "n1's lobby never lists n2's table: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = a.until(|s| s["version"].as_u64().unwrap() >= v).await;
    // Cy plays a bot at another table of n2, and n2 dies while the bot owes a move.
    let cy = Player::guest(&nodes[1].base, &nodes[1].ws, "Cy").await;
    let bot_table = cy.create_trump(2, true).await;
    let mut c = cy.connect(&bot_table).await;
    let (s, v) = cy
        .post(&format!("/api/tables/{bot_table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    // Cy moves until the bot is on turn (winning a trick, Cy leads the next one).
    let mut st = c.until(my_turn).await;
    while my_turn(&st) {
        let v = st["version"].as_u64().unwrap();
        c.act(v, &st["legal"][0]).await;
        st = c.until(|s| s["version"].as_u64().unwrap() > v).await;
    }

    // The owner dies. Sockets held on it just drop; n3, which forwarded Bob's, closes his
    // with 1013 so that his client reconnects.
    let killed = Instant::now();
    nodes[1].child.kill().await.unwrap(); // SIGKILL
    assert_eq!(b.close_code().await, Some(1013));
    drop((a, c));
    let (mut a, after) = reconnect(&ada, &nodes[0], &table, Duration::from_secs(15)).await;
    let took = killed.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "the table continued elsewhere only after {took:?}"
    );
    let (owner, epoch) = owner_of(&db, &table).await;
    assert!(matches!(owner.as_deref(), Some("n1" | "n3")), "{owner:?}");
    assert!(epoch >= 3, "a new owner holds a new epoch: {epoch}");
    // Every acknowledged move is there, and versions went up.
    assert_eq!(game_of(&after), game_of(&before));
    assert!(after["version"].as_u64() > before["version"].as_u64());
    // Play goes on, through both remaining nodes.
    let (mut b, _) = reconnect(&bob, &nodes[2], &table, TIMEOUT).await;
    let v = after["version"].as_u64().unwrap();
    play(&mut a, &mut b, v, 4).await;
    // The bot makes the move it owed, on the new owner, and Cy plays on.
    let (mut c, _) = reconnect(&cy, &nodes[2], &bot_table, TIMEOUT).await;
    let st = c.until(my_turn).await;
    c.act(st["version"].as_u64().unwrap(), &st["legal"][0])
        .await;
    c.until(|s| s["version"].as_u64() > st["version"].as_u64())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_owner_cannot_write_and_draining_hands_tables_over() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let nodes = three(&db).await;
    let (ada, bob, table) = table_on_n1(&nodes).await;
    // Ada's socket is on the owner itself; Bob's goes through n2.
    let mut a = ada.connect(&table).await;
    let mut b = bob.connect(&table).await;
    let v = a.next_state().await["version"].as_u64().unwrap();
    let v = play(&mut a, &mut b, v, 2).await;
    let before_pause = a.until(|s| s["version"].as_u64().unwrap() >= v).await;

    // n1 stops (SIGSTOP) long enough to lose its lease: another node takes the table.
    nodes[0].signal("-STOP");
    let (_, epoch) = owner_other_than(&db, &table, "n1", Duration::from_secs(15)).await;
    assert!(epoch >= 2);
    drop(b);
    let (mut b, held) = reconnect(&bob, &nodes[2], &table, TIMEOUT).await;
    // n3 may have taken the table over from the new owner with Bob's socket (adopted).
    let (owner, epoch) = owner_of(&db, &table).await;
    let owner = owner.expect("an owner");
    assert_ne!(owner, "n1");
    // n1 wakes up and, before or after it notices, Ada's socket on it asks for a write
    // (a chat line, which is stored before it is shown): it must not land.
    nodes[0].signal("-CONT");
    a.send(json!({"type": "chat", "text": "from the past"}))
        .await;
    // Closed with 1013, or dropped: a write timer that ran before the pause may expire
    // at once when n1 wakes. Either way the client reconnects.
    let code = a.close_code().await;
    assert!(matches!(code, Some(1013) | None), "{code:?}");
    let stepped = Instant::now();
    while cluster_event(&nodes[0], "stepped_down").await < 1 {
        assert!(stepped.elapsed() < TIMEOUT, "n1 never stepped down");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
        let (lines,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM chat_lines WHERE table_id = $1")
                .bind(&table)
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(lines, 0, "a write of the paused owner landed");
    }
    assert_eq!(owner_of(&db, &table).await, (Some(owner.clone()), epoch));
    // Ada comes back through n1, which now forwards her to the new owner.
    let (mut a, st) = reconnect(&ada, &nodes[0], &table, TIMEOUT).await;
    assert_eq!(game_of(&st), game_of(&before_pause));
    let v = st["version"]
        .as_u64()
        .unwrap()
        .max(held["version"].as_u64().unwrap());
    let v = play(&mut a, &mut b, v, 2).await;
    let before = a.until(|s| s["version"].as_u64().unwrap() >= v).await;

    // The new owner is drained (SIGTERM): it hands the table over and exits cleanly.
    let i = if owner == "n2" { 1 } else { 2 };
    let other = if i == 1 { 2 } else { 1 };
    let mut nodes = nodes;
    let claimed_before =
        cluster_event(&nodes[0], "claimed").await + cluster_event(&nodes[other], "claimed").await;
    nodes[i].signal("-TERM");
    let status = tokio::time::timeout(TIMEOUT, nodes[i].child.wait())
        .await
        .expect("a drained node exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let (next, next_epoch) = owner_other_than(&db, &table, &owner, TIMEOUT).await;
    assert!(next_epoch > epoch);
    assert!(next == "n1" || next == format!("n{}", other + 1), "{next}");
    let (mut a, after) = reconnect(&ada, &nodes[0], &table, TIMEOUT).await;
    assert_eq!(game_of(&after), game_of(&before));
    let (mut b, _) = reconnect(&bob, &nodes[other], &table, TIMEOUT).await;
    play(&mut a, &mut b, after["version"].as_u64().unwrap(), 2).await;
    // Released by the draining node and claimed once by one of the others.
    assert_eq!(
        cluster_event(&nodes[0], "claimed").await + cluster_event(&nodes[other], "claimed").await,
        claimed_before + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lobby_and_quick_play_span_the_nodes() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let nodes = three(&db).await;
    let ada = Player::guest(&nodes[0].base, &nodes[0].ws, "Ada").await;
    let bob = Player::guest(&nodes[1].base, &nodes[1].ws, "Bob").await;
    let cy = Player::guest(&nodes[2].base, &nodes[2].ws, "Cy").await;
    // Cy watches the lobby on n3; Ada and Bob wait in one queue from n1 and n2.
    let mut watcher = lobby(&cy).await;
    lobby_until(&mut watcher, "tables").await;
    let mut qa = lobby(&ada).await;
    let mut qb = lobby(&bob).await;
    qa.send(json!({"type": "queue_join", "game": "trump", "seats": 2}))
        .await;
    lobby_until(&mut qa, "queued").await;
    // n3's lobby counts Ada's wait although she waits on n1.
    loop {
        let q = lobby_until(&mut watcher, "queues").await;
        let waiting = q["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["game"] == "trump" && q["seats"] == 2)
            .unwrap()["waiting"]
            .as_u64()
            .unwrap();
        if waiting == 1 {
            break;
        }
    }
    qb.send(json!({"type": "queue_join", "game": "trump", "seats": 2}))
        .await;
    // One matcher seats both, whichever node it runs on: the note reaches both nodes.
    let ma = lobby_until(&mut qa, "matched").await;
    let mb = lobby_until(&mut qb, "matched").await;
    assert_eq!(ma["table"], mb["table"]);
    assert_ne!(ma["seat"], mb["seat"]);
    let table = ma["table"].as_str().unwrap().to_string();
    // The lobby on n3 lists the new table, whichever node made it.
    loop {
        let m = watcher.next_any().await;
        if m.to_string().contains(&table) {
            break;
        }
    }
    // They play through their own nodes.
    let mut a = ada.connect(&table).await;
    let mut b = bob.connect(&table).await;
    let v = a.next_state().await["version"].as_u64().unwrap();
    play(&mut a, &mut b, v, 2).await;

    // Cy's daily Solitaire, started on n3, moves to n2 with its first socket; asking for
    // the day's game again through n3 (a path that names no table) still finds it.
    let (s, daily) = cy.post("/api/daily/solitaire", json!({"target": 13})).await;
    assert_eq!(s, 200, "{daily}");
    let daily_table = daily["id"].as_str().unwrap().to_string();
    let mut d = cy
        .at(&nodes[1].base, &nodes[1].ws)
        .connect(&daily_table)
        .await;
    d.next_state().await;
    assert_eq!(owner_of(&db, &daily_table).await.0.as_deref(), Some("n2"));
    let (s, again) = cy.post("/api/daily/solitaire", json!({"target": 13})).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["id"], daily["id"]);
}

/// Issue #33, item 6: a socket whose command finds its table's task ended (here a hand-
/// over, as at a drain: the task takes no more commands, and still holds the
/// connection's queue while it releases the table, stuck behind SQLite's write lock)
/// closes with 1013, as when the queue closes. It used to leave its loop with no close
/// frame at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_whose_command_finds_its_table_ended_closes_with_1013() {
    use futures_util::{SinkExt, StreamExt};
    use sqlx::Connection;
    use tokio_tungstenite::tungstenite::Message as Client;
    let dir = std::env::temp_dir().join(format!("fib-ws-unit-{}", uuid::Uuid::new_v4()));
    let url = format!("sqlite://{}/fib.db", dir.display());
    let app = server::build(server::Config::for_tests(&url))
        .await
        .expect("a server on a SQLite file");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::serve(listener, app.clone(), async move {
        let _ = stopped.await;
    }));
    // Answered once the node has joined its cluster (taking its tables back): a table
    // made before would be claimed again under its feet.
    let health = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .unwrap();
    assert!(health.status().is_success());
    let record = ::realtime::table::open_record("trump", 2, uuid::Uuid::new_v4()).unwrap();
    let table = app
        .core
        .create(record, vec![store::Occupant::Empty; 2])
        .await
        .expect("a new table");
    let (mut ws, _) =
        tokio_tungstenite::connect_async(format!("ws://{addr}/ws/table/{}", table.id))
            .await
            .unwrap();
    let first = ws.next().await.expect("a message").expect("no error");
    assert!(
        first.to_text().unwrap().starts_with(r#"{"type":"state""#),
        "{first:?}"
    );
    // The task is told to hand the table over, and cannot release it while another
    // connection holds SQLite's write lock: it takes no more commands meanwhile.
    let mut lock = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut lock)
        .await
        .unwrap();
    let (reply, answer) = tokio::sync::oneshot::channel();
    table
        .send(::realtime::Cmd::HandOver { reply })
        .await
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while !table.ending() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the task begins to end");

    ws.send(Client::text(r#"{"type":"sync"}"#)).await.unwrap();
    let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            match ws.next().await {
                Some(Ok(Client::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("the socket closes at once");
    assert_eq!(closed, Some(1013), "a close frame: reconnect");

    sqlx::raw_sql("COMMIT").execute(&mut lock).await.unwrap();
    lock.close().await.unwrap();
    answer.await.expect("the hand-over is answered");
    let _ = stop.send(());
    served.await.unwrap().unwrap();
    app.store.close().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// What the log wrote, as the binary's text format writes it.
#[derive(Clone, Default)]
struct Logged(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

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
    let app = server::build(server::Config::for_tests(&url))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::serve(listener, app.clone(), async move {
        let _ = stopped.await;
    }));
    let ws = base.replace("http://", "ws://");
    let ada = Player::guest(&base, &ws, "Ada").await;
    let table = ada.create_trump(2, false).await;

    // The node drains: its table stops, and a request for it is told to try again.
    server::cluster::stop_tables(&app).await;
    let res = reqwest::Client::new()
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

/// Direct challenges between lobby sockets on two nodes (docs/protocol.md §4.2): Ada's
/// socket on n1, Bob's on n2. Declined, cancelled, expired, accepted (both told the table,
/// started with both seated), the challenged side's socket gone, and then nobody there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenges_span_the_nodes() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let extra = ["--challenge-expiry-s", "3"];
    let nodes = [
        Child::start_as(&db, "n1", &extra).await,
        Child::start_as(&db, "n2", &extra).await,
    ];
    let ada = Player::guest(&nodes[0].base, &nodes[0].ws, "Ada").await;
    let bob = Player::guest(&nodes[1].base, &nodes[1].ws, "Bob").await;
    let mut a = lobby(&ada).await;
    let mut b = lobby(&bob).await;
    lobby_until(&mut a, "tables").await;
    lobby_until(&mut b, "tables").await;
    let challenge =
        json!({"type": "challenge", "to": bob.id, "game": "trump", "options": {"target": 8}});

    // Declined on n2: both told.
    a.send(challenge.clone()).await;
    let sent = lobby_until(&mut a, "challenge_sent").await;
    let id = sent["challenge"]["id"].clone();
    let got = lobby_until(&mut b, "challenge_received").await;
    assert_eq!(got["challenge"]["id"], id);
    assert_eq!(got["challenge"]["from"]["id"], ada.id.as_str());
    b.send(json!({"type": "challenge_decline", "id": id})).await;
    assert_eq!(
        lobby_until(&mut b, "challenge_ended").await["reason"],
        "declined"
    );
    assert_eq!(
        lobby_until(&mut a, "challenge_ended").await["reason"],
        "declined"
    );

    // Cancelled on n1: n2 tells Bob, and his late accept finds nothing.
    a.send(challenge.clone()).await;
    let id = lobby_until(&mut a, "challenge_sent").await["challenge"]["id"].clone();
    lobby_until(&mut b, "challenge_received").await;
    a.send(json!({"type": "challenge_cancel", "id": id})).await;
    assert_eq!(
        lobby_until(&mut a, "challenge_ended").await["reason"],
        "cancelled"
    );
    assert_eq!(
        lobby_until(&mut b, "challenge_ended").await["reason"],
        "cancelled"
    );
    b.send(json!({"type": "challenge_accept", "id": id})).await;
    assert_eq!(
        lobby_until(&mut b, "error").await["code"],
        "challenge_not_found"
    );

    // Expired: both told.
    a.send(challenge.clone()).await;
    lobby_until(&mut a, "challenge_sent").await;
    lobby_until(&mut b, "challenge_received").await;
    assert_eq!(
        lobby_until(&mut a, "challenge_ended").await["reason"],
        "expired"
    );
    assert_eq!(
        lobby_until(&mut b, "challenge_ended").await["reason"],
        "expired"
    );

    // Accepted on n2: both are told the table, started with both seated.
    a.send(challenge.clone()).await;
    lobby_until(&mut a, "challenge_sent").await;
    let id = lobby_until(&mut b, "challenge_received").await["challenge"]["id"].clone();
    b.send(json!({"type": "challenge_accept", "id": id})).await;
    let bs = lobby_until(&mut b, "challenge_started").await;
    let as_ = lobby_until(&mut a, "challenge_started").await;
    assert_eq!(as_["table"], bs["table"]);
    assert_eq!(
        (as_["seat"].as_u64(), bs["seat"].as_u64()),
        (Some(0), Some(1))
    );
    let table = bs["table"].as_str().unwrap();
    let (_, info) = bob.get(&format!("/api/tables/{table}")).await;
    assert_eq!(info["status"], "playing", "{info}");
    assert_eq!(info["seats"][0]["id"], ada.id.as_str());
    assert_eq!(info["seats"][1]["id"], bob.id.as_str());
    // Bob plays it through his own node.
    let mut t = bob.connect(table).await;
    assert_eq!(t.next_state().await["table"]["status"], "playing");
    drop(t);

    // The other way round (held by n2), accepted on n1.
    let back = json!({"type": "challenge", "to": ada.id, "game": "trump"});
    b.send(back.clone()).await;
    lobby_until(&mut b, "challenge_sent").await;
    let id = lobby_until(&mut a, "challenge_received").await["challenge"]["id"].clone();
    // Only Ada may answer it.
    b.send(json!({"type": "challenge_accept", "id": id})).await;
    assert_eq!(
        lobby_until(&mut b, "error").await["code"],
        "not_your_challenge"
    );
    a.send(json!({"type": "challenge_accept", "id": id})).await;
    let as_ = lobby_until(&mut a, "challenge_started").await;
    let bs = lobby_until(&mut b, "challenge_started").await;
    assert_eq!(as_["table"], bs["table"]);
    assert_eq!(
        (bs["seat"].as_u64(), as_["seat"].as_u64()),
        (Some(0), Some(1))
    );

    // Bob with a lobby socket on each node: the one he did not answer on is told, whether
    // the answer was relayed to the challenge's node (n1) or given there.
    let bob_on_n1 = Player {
        http: bob.http.clone(),
        base: nodes[0].base.clone(),
        ws: nodes[0].ws.clone(),
        token: bob.token.clone(),
        id: bob.id.clone(),
    };
    let mut b1 = lobby(&bob_on_n1).await;
    lobby_until(&mut b1, "tables").await;
    a.send(challenge.clone()).await;
    let id = lobby_until(&mut a, "challenge_sent").await["challenge"]["id"].clone();
    assert_eq!(
        lobby_until(&mut b, "challenge_received").await["challenge"]["id"],
        id
    );
    assert_eq!(
        lobby_until(&mut b1, "challenge_received").await["challenge"]["id"],
        id
    );
    b.send(json!({"type": "challenge_decline", "id": id})).await;
    assert_eq!(
        lobby_until(&mut b, "challenge_ended").await["reason"],
        "declined"
    );
    let told = lobby_until(&mut b1, "challenge_ended").await;
    assert_eq!((&told["id"], &told["reason"]), (&id, &json!("declined")));
    lobby_until(&mut a, "challenge_ended").await;

    a.send(challenge.clone()).await;
    let id = lobby_until(&mut a, "challenge_sent").await["challenge"]["id"].clone();
    lobby_until(&mut b, "challenge_received").await;
    lobby_until(&mut b1, "challenge_received").await;
    b1.send(json!({"type": "challenge_accept", "id": id})).await;
    lobby_until(&mut b1, "challenge_started").await;
    lobby_until(&mut a, "challenge_started").await;
    let told = lobby_until(&mut b, "challenge_ended").await;
    assert_eq!((&told["id"], &told["reason"]), (&id, &json!("accepted")));
    drop(b1);

    // Bob's only lobby socket (on n2) goes away: Ada (on n1) is told, and he is offline.
    a.send(challenge.clone()).await;
    lobby_until(&mut a, "challenge_sent").await;
    lobby_until(&mut b, "challenge_received").await;
    drop(b);
    assert_eq!(
        lobby_until(&mut a, "challenge_ended").await["reason"],
        "gone"
    );
    a.send(challenge.clone()).await;
    let e = lobby_until(&mut a, "error").await;
    assert_eq!(e["code"], "player_offline", "{e}");
}

/// A TCP proxy in front of Postgres that the test can cut: every connection through it
/// drops, and new ones are refused (a node cut off from its database).
struct Proxy {
    url: String,
    tasks: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(db_url: &str) -> Proxy {
        let after_at = db_url.rsplit_once('@').expect("a user in the URL").1;
        let (target, _) = after_at.split_once('/').expect("a database in the URL");
        let target = target.to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = db_url.replace(&target, &format!("127.0.0.1:{port}"));
        let tasks = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let all = tasks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let target = target.clone();
                let conn = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                all.lock().unwrap().push(conn);
            }
        });
        tasks.lock().unwrap().push(accept);
        Proxy { url, tasks }
    }

    /// Drops every connection and the listener.
    fn cut(&self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// A node cut off from the database lets go of its tables once its lease runs out: their
/// sockets close (1013, to reconnect to a node that can store moves), even while a move
/// waits for its write. A black-box walk found the socket silent for 40 s: the table
/// waited out the writer's 30 s of retries before it let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_the_database_lets_go_of_its_tables() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let Some(db) = postgres_db().await else {
        return;
    };
    let proxy = Proxy::start(&db.url).await;
    let through = Db {
        url: proxy.url.clone(),
        label: db.label,
    };
    let n1 = Child::start_as(&through, "n1", &[]).await;
    let _n2 = Child::start_as(&db, "n2", &[]).await;
    let ada = Player::guest(&n1.base, &n1.ws, "Ada").await;
    let table = ada.create_trump(2, true).await;
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let mut a = ada.connect(&table).await;
    let st = a
        .until(|s| s["legal"].as_array().is_some_and(|l| !l.is_empty()))
        .await;
    proxy.cut();
    let cut = Instant::now();
    let legal = st["legal"].as_array().unwrap().clone();
    a.act(st["version"].as_u64().unwrap(), &first(&legal)).await;
    let limit = Duration::from_secs(20);
    loop {
        let left = limit.saturating_sub(cut.elapsed());
        match tokio::time::timeout(left, a.ws.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => {
                let code = frame.map(|f| u16::from(f.code));
                assert_eq!(code, Some(1013), "closed to reconnect elsewhere");
                break;
            }
            Ok(None | Some(Err(_))) => break,
            Ok(Some(Ok(_))) => {}
            Err(_) => panic!("the socket was still open {limit:?} after the cut"),
        }
    }
    eprintln!("closed {:?} after the cut", cut.elapsed());
}

/// A node that restarts after a crash under a new random id (the default on Postgres)
/// listens where the dead process did, so that process is gone: the new node takes its
/// tables at once instead of waiting for the dead one's lease, and its lobby lists them
/// from the start. A walk saw a restarted single node answer an empty lobby for 5 s.
#[tokio::test]
async fn a_node_restarted_on_the_same_address_takes_the_dead_ones_tables_at_once() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut first = Child::start_with(&db, None, port, &[]).await;
    let (ada, _bob, table) = ada_and_bob_at_trump(&first.base, &first.ws).await;
    let (old, _) = owner_of(&db, &table).await;
    let old = old.expect("the first node owns the table");
    first.child.kill().await.unwrap(); // SIGKILL: its lease stays for up to 5 s
    let killed = Instant::now();
    let second = Child::start_with(&db, None, port, &[]).await;
    let (new, _) = owner_other_than(&db, &table, &old, TIMEOUT).await;
    let took = killed.elapsed();
    // Not the lease running out: the dead node's row is gone (an expired lease would
    // leave it for an hour), the table is the new node's, and the lobby lists it.
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM nodes WHERE id = $1")
        .bind(&old)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        rows, 0,
        "the dead node {old} is still a node; {new} took over after {took:?}"
    );
    let (s, list) = ada.at(&second.base, &second.ws).get("/api/tables").await;
    assert_eq!(s, 200);
    assert!(
        list.as_array()
            .is_some_and(|t| t.iter().any(|t| t["id"] == table.as_str())),
        "the lobby lists the table: {list}"
    );
}

/// A second process under a node id another live process holds stops at start, saying why
/// (an operator walk ran two with FIB_NODE_ID=alpha on one Postgres: they took the tables
/// from each other every second, and nobody could play). One started after the first
/// died (SIGKILL: its lease is not renewed any more) takes the id over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_under_a_live_node_id_is_refused() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let mut first = Child::start_as(&db, "alpha", &[]).await;
    let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"))
        .args([
            "--port",
            "0",
            "--node-id",
            "alpha",
            "--database-url",
            &db.url,
        ])
        .env("NO_COLOR", "1")
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second process stops")
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(r#"another process is running as node "alpha""#),
        "{said}"
    );
    // The first one is untouched.
    let health = health_at(&first.base).await;
    assert_eq!(health["status"], "ok", "{health}");
    first.child.kill().await.unwrap();
    let _again = Child::start_as(&db, "alpha", &[]).await;
}
