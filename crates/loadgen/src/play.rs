//! The players: groups of guests that create, join and start a table, play it through one
//! WebSocket per seat choosing uniformly random legal moves, and start another when the
//! match ends; and the runners that keep bots-only tables going.
//!
//! What is timed, per seat task, on its own socket:
//! - move round trip: my `act` sent → the first message on my socket with a version above
//!   the one I acted on (the table handles commands in order, and only the seat on turn
//!   may act, so that message is my move's result);
//! - opponent sees the move: my `act` sent → another seat's socket receives a version above
//!   it (the acting seat notes what and when in a slot shared by the table's seats);
//! - waiting for a bot (a human against bots): my move's acknowledgement received, with
//!   nothing legal left for me → the next version, the bot's move.
//!
//! Samples count only for moves sent inside the measurement window.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use protocol::{BotLevel, ClientMsg};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;

use crate::conn::{Connector, HttpError, Incoming, TableDoc, Ws};
use crate::stats::{Frames, Rng, Samples, Tally, Window};

/// A guest player: its token for HTTP and the WebSocket upgrade.
#[derive(Clone, Debug)]
pub struct Guest {
    pub token: String,
}

/// What every player of a run shares.
pub struct Ctx {
    pub conn: Arc<Connector>,
    pub game: String,
    pub seats: usize,
    /// Think time before each move (`think` mode): each wait is drawn from ±20% of it.
    pub think: Option<Duration>,
    /// Think mode: each group starts its first table at a random moment within this long
    /// after the run's go.
    pub start_spread: Option<Duration>,
    /// One human against `seats - 1` hard bots (`bots` mode).
    pub vs_bots: bool,
}

/// Everything a seat (or a group of seats) measured and ran into.
#[derive(Debug, Default)]
pub struct Played {
    pub move_rtt: Samples,
    pub opponent_sees: Samples,
    pub bot_wait: Samples,
    /// (think) How late each move went out after its think time was up: the load
    /// generator's own stalls (its runtime, timers, the machine), which a move's round trip
    /// cannot tell from the server's.
    pub send_late: Samples,
    /// Our own moves acknowledged inside the window.
    pub moves: u64,
    pub matches_finished: u64,
    pub tables_started: u64,
    /// The server → client text frames received inside the window.
    pub frames: Frames,
    pub tally: Tally,
}

impl Played {
    pub fn merge(&mut self, o: Played) {
        self.move_rtt.extend(o.move_rtt);
        self.opponent_sees.extend(o.opponent_sees);
        self.bot_wait.extend(o.bot_wait);
        self.send_late.extend(o.send_late);
        self.moves += o.moves;
        self.matches_finished += o.matches_finished;
        self.tables_started += o.tables_started;
        self.frames.merge(o.frames);
        self.tally.merge(o.tally);
    }
}

/// The last move sent at a table, so the other seats can time when they see it.
#[derive(Debug, Default)]
struct LastAct {
    /// The version the move was made against: the first version above it is its result.
    base: u64,
    sent: Option<Instant>,
    /// Who moved.
    seat: usize,
    /// Seats that saw it already (bit per seat), the actor's included.
    seen: u64,
}

/// Quiet that long while a match is on means it is stuck: give the table up and start
/// another, so one bug does not idle a group for the rest of the run.
fn stall_after(ctx: &Ctx) -> Duration {
    if ctx.vs_bots {
        // Hard bots queue for two cores behind every bots-only table: be patient.
        Duration::from_secs(60)
    } else {
        Duration::from_secs(15) + ctx.think.unwrap_or_default() * 2
    }
}

/// An act with neither a result nor a refusal after this long is given up (and reported).
const UNANSWERED: Duration = Duration::from_secs(10);

/// How many times a seat reconnects within one match before giving the match up.
const MAX_RECONNECTS: u32 = 3;

/// A group of `guests` (one per seat; one alone against bots) playing table after table
/// until the window ends. Says it is `ready` once its first table is set up and waits for
/// `go` before starting it.
pub async fn group(
    ctx: Arc<Ctx>,
    guests: Vec<Guest>,
    salt: u64,
    ready: Arc<AtomicUsize>,
    mut go: watch::Receiver<Option<Window>>,
) -> Played {
    let mut out = Played::default();
    let mut window = None;
    let mut rng = Rng::from_clock(salt);
    let mut first = true;
    loop {
        let setup = set_up(&ctx, &guests).await;
        let Some(w) = measured_window(&mut window, &ready, &mut go).await else {
            return out;
        };
        // At a human pace, each table starts at its own moment of the ramp before the window
        // opens: tables started in the same instant would move in step, each second's moves
        // a burst that no real crowd of players makes (and 5,000 starts at once are a
        // burst of their own).
        if first && let Some(spread) = ctx.start_spread {
            first = false;
            let offset = spread.mul_f64(rng.below(1_000_000) as f64 / 1_000_000.0);
            tokio::time::sleep(offset).await;
        }
        if Instant::now() >= w.end {
            break;
        }
        let (table, sockets) = match setup {
            Ok(s) => s,
            Err(e) => {
                out.tally.http(&e);
                // A server that refuses tables now will likely refuse the next at once.
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if let Err(e) = ctx.conn.start(&guests[0].token, &table).await {
            out.tally.http(&e.key());
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        out.tables_started += 1;
        let shared = Arc::new(Mutex::new(LastAct::default()));
        let seats: Vec<_> = sockets
            .into_iter()
            .zip(&guests)
            .map(|(ws, g)| {
                let seat = Seat {
                    ctx: ctx.clone(),
                    token: g.token.clone(),
                    table: table.clone(),
                    shared: shared.clone(),
                    window: w,
                    rng: Rng::from_clock(rng.next_u64()),
                };
                tokio::spawn(seat.play(ws))
            })
            .collect();
        // Every seat sees the end: count the match once.
        let mut finished = false;
        for s in seats {
            match s.await {
                Ok(mut p) => {
                    finished |= p.matches_finished > 0;
                    p.matches_finished = 0;
                    out.merge(p);
                }
                Err(e) => out.tally.error("loadgen_task_failed", &e.to_string()),
            }
        }
        out.matches_finished += u64::from(finished);
    }
    out
}

/// Creates a table, seats the group, and opens each seat's socket (before the start, so no
/// change is missed).
async fn set_up(ctx: &Ctx, guests: &[Guest]) -> Result<(String, Vec<Ws>), String> {
    let key = |e: HttpError| e.key();
    let bots = ctx.vs_bots.then_some(BotLevel::Hard);
    let info = ctx
        .conn
        .create_table(&guests[0].token, &ctx.game, ctx.seats, bots, true)
        .await
        .map_err(key)?;
    let table = info.id.to_string();
    for g in &guests[1..] {
        ctx.conn.join(&g.token, &table).await.map_err(key)?;
    }
    let mut sockets = Vec::with_capacity(guests.len());
    for g in guests {
        let ws = ctx
            .conn
            .table_ws(&table, None, Some(&g.token))
            .await
            .map_err(|e| format!("table socket {e}"))?;
        sockets.push(ws);
    }
    Ok((table, sockets))
}

/// One seat's player for one match.
struct Seat {
    ctx: Arc<Ctx>,
    token: String,
    table: String,
    shared: Arc<Mutex<LastAct>>,
    window: Window,
    rng: Rng,
}

/// What the read loop does next.
enum Next {
    /// The match is over (or given up): close and return.
    Done,
    /// The socket is gone mid-match: reconnect.
    Lost,
}

/// A seat's moving parts within one match.
#[derive(Default)]
struct SeatState {
    doc: TableDoc,
    /// My move in flight: the version it was made against and when it was sent.
    inflight: Option<(u64, Instant)>,
    /// (Against bots) my move's acknowledgement left me nothing to do: its version and
    /// when it arrived; the next version is a bot's move.
    acked: Option<(u64, Instant)>,
    /// (Think mode) when to move.
    act_at: Option<Instant>,
    /// After a refusal other than `stale_version`: no move before this (and a `sync`).
    hold_until: Option<Instant>,
    last_heard: Option<Instant>,
}

impl Seat {
    async fn play(mut self, ws: Ws) -> Played {
        let mut out = Played::default();
        let mut st = SeatState {
            last_heard: Some(Instant::now()),
            ..SeatState::default()
        };
        let mut ws = Some(ws);
        let mut reconnects = 0;
        let stall = stall_after(&self.ctx);
        while let Some(sock) = ws.as_mut() {
            let next = self.run(sock, &mut st, &mut out, stall).await;
            match next {
                Next::Done => break,
                Next::Lost => {
                    out.tally.unexpected_closes += 1;
                    ws = None;
                    if reconnects >= MAX_RECONNECTS || Instant::now() >= self.window.end {
                        break;
                    }
                    reconnects += 1;
                    out.tally.reconnects += 1;
                    st.inflight = None;
                    st.acked = None;
                    let since = st.doc.doc.as_ref().map(|_| st.doc.version);
                    match self
                        .ctx
                        .conn
                        .table_ws(&self.table, since, Some(&self.token))
                        .await
                    {
                        Ok(s) => {
                            st.last_heard = Some(Instant::now());
                            ws = Some(s);
                        }
                        Err(e) => out.tally.http(&format!("table socket {e}")),
                    }
                }
            }
        }
        if let Some(mut s) = ws {
            // A proper close, so the server counts a departure rather than a failure.
            let _ = tokio::time::timeout(Duration::from_secs(1), s.close(None)).await;
        }
        out
    }

    /// Reads and moves until the match ends, the window closes, or the socket is lost.
    async fn run(
        &mut self,
        ws: &mut Ws,
        st: &mut SeatState,
        out: &mut Played,
        stall: Duration,
    ) -> Next {
        loop {
            let now = Instant::now();
            if now >= self.window.end {
                return Next::Done;
            }
            if let Some((_, sent)) = st.inflight
                && now >= sent + UNANSWERED
            {
                // Neither a result nor a refusal: a bug (the server lost the message).
                out.tally.error(
                    "loadgen_unanswered_act",
                    "an act had neither a result nor a refusal within 10 s",
                );
                st.inflight = None;
            }
            if let Some(at) = st.act_at.filter(|at| *at <= now) {
                if self.window.contains(at) {
                    out.send_late.push(Instant::now() - at);
                }
                st.act_at = None;
                if !self.act(ws, st).await {
                    return Next::Lost;
                }
                continue;
            }
            if let Some(h) = st.hold_until.filter(|h| *h <= now) {
                let _ = h;
                st.hold_until = None;
                // Ask for the whole truth again, and move on it.
                if send(ws, &ClientMsg::Sync {}).await.is_err() {
                    return Next::Lost;
                }
            }
            let heard = st.last_heard.unwrap_or(now);
            let mut wake = self.window.end.min(heard + stall);
            for t in [st.act_at, st.hold_until].into_iter().flatten() {
                wake = wake.min(t);
            }
            let msg = match tokio::time::timeout_at(wake.into(), ws.next()).await {
                Err(_) => {
                    if Instant::now() >= heard + stall
                        && st.act_at.is_none()
                        && st.hold_until.is_none()
                    {
                        out.tally.stalls += 1;
                        return Next::Done;
                    }
                    continue;
                }
                Ok(None) | Ok(Some(Err(_))) => {
                    return if st.doc.over() {
                        Next::Done
                    } else {
                        Next::Lost
                    };
                }
                Ok(Some(Ok(m))) => m,
            };
            let now = Instant::now();
            st.last_heard = Some(now);
            let text = match msg {
                Message::Text(t) => t,
                Message::Close(frame) => {
                    if let Some(f) = frame {
                        *out.tally.close_codes.entry(u16::from(f.code)).or_default() += 1;
                    }
                    return if st.doc.over() {
                        Next::Done
                    } else {
                        Next::Lost
                    };
                }
                Message::Binary(_) => {
                    out.tally.decode_failures += 1;
                    continue;
                }
                // Pings are answered by tungstenite itself.
                _ => continue,
            };
            if self.window.contains(now) {
                out.frames.record(text.as_str());
            }
            match st.doc.take(text.as_str()) {
                Incoming::Updated { version, actor, .. } => {
                    self.updated(version, actor, now, st, out)
                }
                Incoming::Mismatch => {
                    out.tally.patch_mismatches += 1;
                    st.inflight = None;
                    if send(ws, &ClientMsg::Sync {}).await.is_err() {
                        return Next::Lost;
                    }
                    continue;
                }
                Incoming::Error { code, message } => {
                    out.tally.error(&code, &message);
                    st.inflight = None;
                    if code != "stale_version" {
                        // After any other refusal, pause and resync rather than repeat it
                        // in a loop.
                        st.hold_until = Some(now + Duration::from_millis(100));
                        continue;
                    }
                    // Stale: the patches that moved the table on came before the refusal,
                    // so the document held is current; choose again from it (below).
                }
                Incoming::Pong | Incoming::Chat => continue,
                Incoming::Undecodable(e) => {
                    out.tally.decode_failures += 1;
                    out.tally.error("loadgen_undecodable", &e);
                    continue;
                }
            }
            if st.doc.over() {
                out.matches_finished += 1;
                return Next::Done;
            }
            if st.inflight.is_none() && st.hold_until.is_none() && st.doc.legal_count() > 0 {
                match self.ctx.think {
                    Some(t) => {
                        if st.act_at.is_none() {
                            // ±20% so the tables do not all move in lockstep.
                            let jitter = 0.8 + 0.4 * (self.rng.below(1001) as f64 / 1000.0);
                            st.act_at = Some(now + t.mul_f64(jitter));
                        }
                    }
                    None => {
                        if !self.act(ws, st).await {
                            return Next::Lost;
                        }
                    }
                }
            }
        }
    }

    /// The document moved to `version` at `now`, by `actor`'s move as far as the events
    /// say: time what that completes.
    fn updated(
        &mut self,
        version: u64,
        actor: Option<usize>,
        now: Instant,
        st: &mut SeatState,
        out: &mut Played,
    ) {
        let w = self.window;
        let in_window = |sent: Instant| w.contains(sent) && now <= w.end;
        let me = st.doc.seat();
        if let Some((base, sent)) = st.inflight
            && version > base
        {
            if actor.is_none() || actor == me {
                st.inflight = None;
                if in_window(sent) {
                    out.move_rtt.push(now - sent);
                    out.moves += 1;
                }
                if self.ctx.vs_bots && st.doc.legal_count() == 0 && st.doc.status() == "playing" {
                    st.acked = Some((version, now));
                }
            }
            // Otherwise another seat moved first (rummy's off-turn moves): my act will
            // come back `stale_version`. It stays in flight until then, so that no second
            // act goes out meanwhile and this change is not timed as mine.
        } else if let Some((acked, at)) = st.acked
            && version > acked
            && (actor.is_none() || actor != me)
        {
            st.acked = None;
            if in_window(at) {
                out.bot_wait.push(now - at);
            }
        }
        if let Some(seat) = me.filter(|s| *s < 64) {
            let mut last = self.shared.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(sent) = last.sent
                && version > last.base
                && last.seen & (1 << seat) == 0
                && (actor.is_none() || actor == Some(last.seat))
            {
                last.seen |= 1 << seat;
                if in_window(sent) {
                    out.opponent_sees.push(now - sent);
                }
            }
        }
    }

    /// Sends a uniformly random legal move, against the newest version held. `false`: the
    /// socket is gone.
    async fn act(&mut self, ws: &mut Ws, st: &mut SeatState) -> bool {
        let legal = st.doc.legal_count();
        if legal == 0 || st.inflight.is_some() {
            return true;
        }
        // Written as text around the action's own text (a `ClientMsg::Act`): the action
        // is not parsed into a tree only to be written out again.
        let Some(msg) = st.doc.act_text(self.rng.below(legal)) else {
            // Not a value this client can send back (the server never writes one): start
            // again from a full state.
            st.doc.doc = None;
            return send(ws, &ClientMsg::Sync {}).await.is_ok();
        };
        let base = st.doc.version;
        let sent = Instant::now();
        if ws.send(Message::text(msg)).await.is_err() {
            return false;
        }
        st.inflight = Some((base, sent));
        if let Some(seat) = st.doc.seat().filter(|s| *s < 64) {
            *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = LastAct {
                base,
                sent: Some(sent),
                seat,
                seen: 1 << seat,
            };
        }
        true
    }
}

async fn send(ws: &mut Ws, msg: &ClientMsg) -> Result<(), ()> {
    let text = serde_json::to_string(msg).expect("a ClientMsg serializes");
    ws.send(Message::text(text)).await.map_err(|_| ())
}

/// Keeps one bots-only table of hard bots going (created without a seat for the creator,
/// then started), starting another when it finishes, until the window ends. It watches
/// the table by asking `GET /api/tables/{id}` every second rather than through a socket,
/// so that no spectator connection changes how the bots play.
pub async fn bot_tables(
    ctx: Arc<Ctx>,
    guest: Guest,
    ready: Arc<AtomicUsize>,
    mut go: watch::Receiver<Option<Window>>,
) -> Played {
    let mut out = Played::default();
    let mut window = None;
    loop {
        let created = ctx
            .conn
            .create_table(
                &guest.token,
                &ctx.game,
                ctx.seats,
                Some(BotLevel::Hard),
                false,
            )
            .await;
        let Some(w) = measured_window(&mut window, &ready, &mut go).await else {
            return out;
        };
        if Instant::now() >= w.end {
            break;
        }
        let table = match created {
            Ok(t) => t.id.to_string(),
            Err(e) => {
                out.tally.http(&e.key());
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        if let Err(e) = ctx.conn.start(&guest.token, &table).await {
            out.tally.http(&e.key());
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        out.tables_started += 1;
        while Instant::now() < w.end {
            tokio::time::sleep_until(w.end.min(Instant::now() + Duration::from_secs(1)).into())
                .await;
            match ctx.conn.table(&table).await {
                Ok(t)
                    if t.winners.is_some()
                        || matches!(
                            t.status,
                            protocol::TableStatus::Finished | protocol::TableStatus::Abandoned
                        ) =>
                {
                    out.matches_finished += 1;
                    break;
                }
                Ok(_) => {}
                Err(e) => out.tally.http(&e.key()),
            }
        }
    }
    out
}

/// The measurement window: the first call says this player is ready and waits for the
/// window to be set; later calls return it at once. `None` if the run was called off.
async fn measured_window(
    window: &mut Option<Window>,
    ready: &AtomicUsize,
    go: &mut watch::Receiver<Option<Window>>,
) -> Option<Window> {
    if window.is_none() {
        ready.fetch_add(1, Relaxed);
        let w = go.wait_for(Option::is_some).await.ok()?.expect("some");
        *window = Some(w);
    }
    *window
}
