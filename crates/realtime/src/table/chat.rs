//! Table chat and quick reactions, the lobby's chat, and mutes.
//!
//! Table chat is handled by the table's task, like everything else of a table, but it is no
//! change of the table: it does not bump the version and never enters the state document.
//! A line travels as its own message (`chat`) to the connections that may see it, after it
//! was stored through the store's single writer (ordered with the table's other writes, and
//! durable before anyone sees it).
//!
//! Who sees what:
//! - players' lines reach everyone;
//! - while the match is not over, spectators' lines reach spectators only, so nobody can
//!   coach a player from the audience; when the match ends, the players are sent a fresh
//!   history that holds them too;
//! - nobody is sent the lines of a player they muted (stored per player, so it holds on
//!   every device and at every table).
//!
//! A connection takes part in chat once its socket says `Hello` (with its player's mutes,
//! which the socket reads from the store): it is then sent the latest lines it may see, and
//! every new one. Lines that arrive before that are in the history.
//!
//! The lobby's chat ([`LobbyChat`]) is shared by the lobby sockets and kept in memory only:
//! the latest [`CHAT_HISTORY`] lines, gone with the process.
//!
//! Limits (documented in docs/protocol.md §3.7): the text checks of
//! [`protocol::check_chat_text`], done by the socket before the table hears of a line, and
//! at most [`CHAT_RATE_MESSAGES`] lines and reactions per player in [`CHAT_RATE_WINDOW_MS`],
//! per table and in the lobby.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use protocol::{
    CHAT_HISTORY, CHAT_RATE_MESSAGES, CHAT_RATE_WINDOW_MS, ChatBody, ChatLine, Emote, ServerMsg,
    Viewer,
};
use store::{ChatRecord, TableStatus, TableWrite, WriteOp};
use tokio::sync::broadcast;
use uuid::Uuid;

use super::Table;
use crate::lock;
use crate::time::now_ms;

/// What a socket asks of its table's chat.
pub enum ChatCmd {
    /// The connection is ready for chat: `muted` is its player's mute list, as the socket
    /// read it from the store (empty for an anonymous spectator). Answered with the
    /// history the connection may see.
    Hello { muted: Vec<Uuid> },
    /// A line or a reaction from the connection's signed-in player, whose text the socket
    /// has already checked. `name` is the player's display name.
    Say { name: String, body: ChatBody },
    /// The socket stored a change of its player's mutes: `players` is the whole new list.
    Muted { players: Vec<Uuid> },
}

/// A refused chat message. Each variant says what the client sees: an `error` with this
/// code, the message of [`ChatError::message`] and, for the rate limit, `retry_after_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatError {
    /// `chat_empty`, `chat_too_long`, `chat_bad_character`: the text checks of
    /// [`protocol::check_chat_text`].
    BadText(&'static str, String),
    /// `chat_rate_limited`: more than [`CHAT_RATE_MESSAGES`] lines in the window; the
    /// number is how many milliseconds until one is taken again.
    RateLimited(u64),
    /// `unauthorized`: an anonymous connection tried to chat or mute.
    NotSignedIn,
    /// `cannot_mute_self`.
    MuteSelf,
    /// `player_not_found`: the player to mute does not exist.
    UnknownPlayer(Uuid),
    /// `internal`: the store failed (logged where it happened).
    Internal,
}

impl ChatError {
    pub fn code(&self) -> &'static str {
        match self {
            ChatError::BadText(code, _) => code,
            ChatError::RateLimited(_) => "chat_rate_limited",
            ChatError::NotSignedIn => "unauthorized",
            ChatError::MuteSelf => "cannot_mute_self",
            ChatError::UnknownPlayer(_) => "player_not_found",
            ChatError::Internal => "internal",
        }
    }

    pub fn message(&self) -> String {
        match self {
            ChatError::BadText(_, m) => m.clone(),
            ChatError::RateLimited(ms) => format!(
                "too many chat messages: at most {CHAT_RATE_MESSAGES} in {} s; try again in {:.1} s",
                CHAT_RATE_WINDOW_MS / 1000,
                *ms as f64 / 1000.0
            ),
            ChatError::NotSignedIn => "sign in (POST /api/guest) to chat or mute".into(),
            ChatError::MuteSelf => "you cannot mute yourself".into(),
            ChatError::UnknownPlayer(id) => format!("no player {id}"),
            ChatError::Internal => {
                "the server could not do that; nothing changed, try again".into()
            }
        }
    }

    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ChatError::RateLimited(ms) => Some(*ms),
            _ => None,
        }
    }

    /// The table socket's `error` message for this refusal.
    pub fn server_msg(&self, version: u64) -> ServerMsg {
        ServerMsg::Error {
            code: self.code().into(),
            message: self.message(),
            version,
            retry_after_ms: self.retry_after_ms(),
        }
    }
}

impl From<(&'static str, String)> for ChatError {
    fn from((code, message): (&'static str, String)) -> Self {
        ChatError::BadText(code, message)
    }
}

/// The times of one sender's latest lines: at most [`CHAT_RATE_MESSAGES`] in any window of
/// [`CHAT_RATE_WINDOW_MS`].
#[derive(Default)]
pub struct RateWindow(VecDeque<Instant>);

impl RateWindow {
    fn window() -> Duration {
        Duration::from_millis(CHAT_RATE_WINDOW_MS)
    }

    /// `Err(ms)`: the window is full, and a line is taken again in `ms` milliseconds.
    pub fn check(&mut self, now: Instant) -> Result<(), ChatError> {
        while self
            .0
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Self::window())
        {
            self.0.pop_front();
        }
        match self.0.front() {
            Some(oldest) if self.0.len() >= CHAT_RATE_MESSAGES => {
                let wait = Self::window() - now.duration_since(*oldest);
                // Rounded up: a client that waits this long is taken.
                Err(ChatError::RateLimited(
                    wait.as_micros().div_ceil(1000) as u64
                ))
            }
            _ => Ok(()),
        }
    }

    /// Counts a line that was taken.
    pub fn record(&mut self, now: Instant) {
        self.0.push_back(now);
    }

    fn idle(&self, now: Instant) -> bool {
        self.0
            .back()
            .is_none_or(|t| now.duration_since(*t) >= Self::window())
    }
}

/// A table's chat, as its task keeps it.
#[derive(Default)]
pub(super) struct Chat {
    /// Whether the latest lines (and the next line number) were read from the store.
    loaded: bool,
    /// The number of the next line.
    next_seq: i64,
    /// The latest lines of players, and of spectators, oldest first (each at most
    /// [`CHAT_HISTORY`]: a chatty audience cannot push the players' lines out).
    players: VecDeque<ChatLine>,
    spectators: VecDeque<ChatLine>,
    /// Connections that said `Hello` (one that left is dropped: [`Table::chat_forget`]).
    ready: HashSet<u64>,
    /// Mutes of the players with a ready connection.
    mutes: HashMap<Uuid, HashSet<Uuid>>,
    limits: HashMap<Uuid, RateWindow>,
    /// Whether players have been sent the spectators' lines (the match is over).
    revealed: bool,
}

/// A stored line as the wire shows it; `None` for a row that does not decode (logged).
fn line_of(r: ChatRecord) -> Option<ChatLine> {
    let body = match (r.text, r.emote.as_deref().map(Emote::parse)) {
        (Some(text), None) => ChatBody::Text { text },
        (None, Some(Some(emote))) => ChatBody::Emote { emote },
        _ => {
            tracing::error!(
                seq = r.seq,
                "a stored chat line is neither a text nor a known emote"
            );
            return None;
        }
    };
    Some(ChatLine {
        seq: r.seq as u64,
        player: r.player_id,
        name: r.name,
        spectator: r.spectator,
        at: r.created_at,
        body,
    })
}

fn keep_latest(lines: &mut VecDeque<ChatLine>, line: ChatLine) {
    lines.push_back(line);
    while lines.len() > CHAT_HISTORY {
        lines.pop_front();
    }
}

fn text_of(msg: &ServerMsg) -> String {
    serde_json::to_string(msg).expect("server messages serialize")
}

impl Table {
    fn match_over(&self) -> bool {
        matches!(
            self.record.status,
            TableStatus::Finished | TableStatus::Abandoned
        )
    }

    /// Whether a connection of `who` may be sent `line`: spectators' lines reach players
    /// only once the match is over (no coaching), and nobody gets a muted player's lines.
    fn may_see(&self, who: Option<Uuid>, line: &ChatLine) -> bool {
        let seen = !line.spectator
            || self.match_over()
            || self.viewer_for(who) == Viewer::Spectator
            || who == Some(line.player);
        let muted = who.is_some_and(|w| {
            self.chat
                .mutes
                .get(&w)
                .is_some_and(|m| m.contains(&line.player))
        });
        seen && !muted
    }

    /// Reads the latest lines and the next line number from the store, once.
    async fn load_chat(&mut self) -> Result<(), ChatError> {
        if self.chat.loaded {
            return Ok(());
        }
        let stored = self
            .core
            .store
            .chat_history(self.record.id, CHAT_HISTORY as i64)
            .await
            .map_err(|e| {
                tracing::error!(table = %self.record.id, error = %e, "could not read the chat");
                ChatError::Internal
            })?;
        let over = self.match_over();
        let chat = &mut self.chat;
        chat.next_seq = stored.iter().map(|r| r.seq).max().unwrap_or(0) + 1;
        for line in stored.into_iter().filter_map(line_of) {
            if line.spectator {
                chat.spectators.push_back(line);
            } else {
                chat.players.push_back(line);
            }
        }
        chat.loaded = true;
        chat.revealed = over;
        Ok(())
    }

    /// Handles one chat command of connection `conn`.
    pub(super) async fn chat(&mut self, conn: u64, cmd: ChatCmd) {
        let Some(who) = self.fan.who(conn) else {
            return;
        };
        let result = match cmd {
            ChatCmd::Hello { muted } => {
                if let Some(me) = who {
                    // The table's copy is kept while the player has a ready connection
                    // here: a mute made on one of them since is newer than this read.
                    let others = self
                        .chat
                        .ready
                        .iter()
                        .any(|&c| c != conn && self.fan.who(c) == Some(Some(me)));
                    if !others {
                        self.chat.mutes.insert(me, muted.into_iter().collect());
                    }
                }
                self.chat.ready.insert(conn);
                match self.load_chat().await {
                    Ok(()) => {
                        self.send_history(conn);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            ChatCmd::Say { name, body } => match who {
                Some(me) => self.say(me, name, body).await,
                None => Err(ChatError::NotSignedIn),
            },
            ChatCmd::Muted { players } => {
                if let Some(me) = who {
                    self.chat
                        .mutes
                        .insert(me, players.iter().copied().collect());
                    let text = text_of(&ServerMsg::Muted { players });
                    for c in self.ready_conns() {
                        if self.fan.who(c) == Some(Some(me)) {
                            self.send_to(c, text.clone());
                        }
                    }
                }
                Ok(())
            }
        };
        if let Err(e) = result {
            self.core.metrics.rejected(e.code());
            let text = text_of(&e.server_msg(self.version));
            self.send_to(conn, text);
        }
    }

    /// A connection that left: out of the ready set, and its player's mutes with it once no
    /// ready connection of theirs is left (the next `Hello` reads them again). Both grew
    /// with every visitor of a long-lived table until then (a soak walk: about 120 bytes a
    /// visitor).
    pub(super) fn chat_forget(&mut self, conn: u64, who: Option<Uuid>) {
        self.chat.ready.remove(&conn);
        if let Some(me) = who {
            let fan = &self.fan;
            if !self
                .chat
                .ready
                .iter()
                .any(|&c| fan.who(c) == Some(Some(me)))
            {
                self.chat.mutes.remove(&me);
            }
        }
    }

    /// The ready connections still connected (the others are forgotten).
    fn ready_conns(&mut self) -> Vec<u64> {
        let fan = &self.fan;
        self.chat.ready.retain(|&c| fan.who(c).is_some());
        let mut conns: Vec<u64> = self.chat.ready.iter().copied().collect();
        conns.sort_unstable();
        conns
    }

    /// Stores a line (through the single writer, so it is durable before anyone sees it)
    /// and sends it to every ready connection that may see it.
    async fn say(&mut self, me: Uuid, name: String, body: ChatBody) -> Result<(), ChatError> {
        let now = Instant::now();
        self.chat.limits.entry(me).or_default().check(now)?;
        self.load_chat().await?;
        // A line number is used once, even when its write fails: the write may still
        // have landed, and the next line must not collide with it.
        let seq = self.chat.next_seq;
        self.chat.next_seq += 1;
        let spectator = self.seat_of(Some(me)).is_none();
        let at = now_ms();
        let (text, emote) = match &body {
            ChatBody::Text { text } => (Some(text.clone()), None),
            ChatBody::Emote { emote } => (None, Some(emote.as_str().to_string())),
        };
        let record = ChatRecord {
            seq,
            player_id: me,
            name: name.clone(),
            spectator,
            text,
            emote,
            created_at: at,
        };
        let unit = TableWrite::one(self.record.id, at, WriteOp::Chat(record)).fenced(self.epoch);
        if let Err(e) = self.core.writer.write(unit).await {
            self.note_fenced(&e);
            tracing::error!(table = %self.record.id, error = %e, "could not store a chat line");
            return Err(ChatError::Internal);
        }
        self.chat.limits.entry(me).or_default().record(now);
        self.chat.limits.retain(|_, w| !w.idle(now));
        let line = ChatLine {
            seq: seq as u64,
            player: me,
            name,
            spectator,
            at,
            body,
        };
        let text = text_of(&ServerMsg::Chat { line: line.clone() });
        for c in self.ready_conns() {
            let who = self.fan.who(c).flatten();
            if self.may_see(who, &line) {
                self.send_to(c, text.clone());
            }
        }
        if spectator {
            keep_latest(&mut self.chat.spectators, line);
        } else {
            keep_latest(&mut self.chat.players, line);
        }
        Ok(())
    }

    /// Sends `conn` the latest lines it may see, and its player's mutes.
    fn send_history(&mut self, conn: u64) {
        let Some(who) = self.fan.who(conn) else {
            return;
        };
        let mut lines: Vec<ChatLine> = self
            .chat
            .players
            .iter()
            .chain(&self.chat.spectators)
            .filter(|l| self.may_see(who, l))
            .cloned()
            .collect();
        lines.sort_by_key(|l| l.seq);
        let skip = lines.len().saturating_sub(CHAT_HISTORY);
        lines.drain(..skip);
        let mut muted: Vec<Uuid> = who
            .and_then(|w| self.chat.mutes.get(&w))
            .map(|m| m.iter().copied().collect())
            .unwrap_or_default();
        muted.sort_unstable();
        let text = text_of(&ServerMsg::ChatHistory { lines, muted });
        self.send_to(conn, text);
    }

    /// Once the match is over, players may read what the spectators said: each player's
    /// ready connection is sent a fresh history (once). Called after every change.
    pub(super) fn chat_after_change(&mut self) {
        if self.chat.revealed || !self.chat.loaded || !self.match_over() {
            return;
        }
        self.chat.revealed = true;
        if self.chat.spectators.is_empty() {
            return;
        }
        for c in self.ready_conns() {
            let who = self.fan.who(c).flatten();
            if self.viewer_for(who) != Viewer::Spectator {
                self.send_history(c);
            }
        }
    }
}

/// What a lobby socket is sent of the lobby's chat.
pub struct LobbyFeed {
    /// The latest lines, oldest first, as of subscribing.
    pub history: Vec<ChatLine>,
    /// Every line from then on.
    pub lines: broadcast::Receiver<ChatLine>,
}

/// The lobby's chat, shared by every lobby socket of the process and kept in memory.
pub struct LobbyChat {
    inner: Mutex<LobbyInner>,
    feed: broadcast::Sender<ChatLine>,
}

#[derive(Default)]
struct LobbyInner {
    next_seq: u64,
    lines: VecDeque<ChatLine>,
    limits: HashMap<Uuid, RateWindow>,
}

/// Lines a lobby socket may fall behind by before it is sent the history again.
const LOBBY_CHAT_BACKLOG: usize = 256;

impl Default for LobbyChat {
    fn default() -> Self {
        LobbyChat {
            inner: Mutex::new(LobbyInner {
                next_seq: 1,
                ..LobbyInner::default()
            }),
            feed: broadcast::channel(LOBBY_CHAT_BACKLOG).0,
        }
    }
}

impl LobbyChat {
    /// The latest lines and every later one, with nothing missed or doubled in between.
    pub fn subscribe(&self) -> LobbyFeed {
        let inner = lock(&self.inner);
        LobbyFeed {
            lines: self.feed.subscribe(),
            history: inner.lines.iter().cloned().collect(),
        }
    }

    /// The latest lines (for a socket that fell behind).
    pub fn history(&self) -> Vec<ChatLine> {
        lock(&self.inner).lines.iter().cloned().collect()
    }

    /// Says `body` in the lobby as player `me` (rate limited per player).
    pub fn say(&self, me: Uuid, name: &str, body: ChatBody) -> Result<(), ChatError> {
        let now = Instant::now();
        let mut inner = lock(&self.inner);
        inner.limits.entry(me).or_default().check(now)?;
        inner.limits.entry(me).or_default().record(now);
        inner.limits.retain(|_, w| !w.idle(now));
        let line = ChatLine {
            seq: inner.next_seq,
            player: me,
            name: name.to_string(),
            spectator: false,
            at: now_ms(),
            body,
        };
        inner.next_seq += 1;
        // Sent under the lock, so that `subscribe` sees each line either in the history
        // or in the feed, never both. No socket listening is fine.
        let _ = self.feed.send(line.clone());
        inner.lines.push_back(line);
        while inner.lines.len() > CHAT_HISTORY {
            inner.lines.pop_front();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store keeps each kind's latest lines, as many as a page is sent: what it
    /// forgets, no page could show.
    #[test]
    fn the_store_keeps_what_a_page_is_sent() {
        assert_eq!(store::CHAT_KEPT as usize, CHAT_HISTORY);
    }

    #[test]
    fn the_rate_window_slides() {
        let mut w = RateWindow::default();
        let t0 = Instant::now();
        for i in 0..CHAT_RATE_MESSAGES {
            w.check(t0 + Duration::from_millis(i as u64)).unwrap();
            w.record(t0 + Duration::from_millis(i as u64));
        }
        let later = t0 + Duration::from_millis(1_000);
        let Err(ChatError::RateLimited(ms)) = w.check(later) else {
            panic!("the window is full");
        };
        assert_eq!(ms, CHAT_RATE_WINDOW_MS - 1_000);
        // Once the oldest line leaves the window, one more is taken.
        w.check(t0 + Duration::from_millis(CHAT_RATE_WINDOW_MS))
            .unwrap();
    }

    #[test]
    fn lobby_history_is_bounded_and_feeds_follow_it() {
        let chat = LobbyChat::default();
        let early = chat.subscribe();
        assert!(early.history.is_empty());
        let mut seq = 0;
        for i in 0..(CHAT_HISTORY + 5) {
            // Many players, so the rate limit is not what is tested here.
            let body = ChatBody::Text {
                text: format!("line {i}"),
            };
            chat.say(Uuid::new_v4(), "Ada", body).unwrap();
            seq += 1;
        }
        let late = chat.subscribe();
        assert_eq!(late.history.len(), CHAT_HISTORY);
        assert_eq!(late.history.last().unwrap().seq, seq);
        assert_eq!(late.history[0].seq, seq - CHAT_HISTORY as u64 + 1);
        let mut rx = early.lines;
        assert_eq!(rx.try_recv().unwrap().seq, 1);
        let ada = Uuid::new_v4();
        for _ in 0..CHAT_RATE_MESSAGES {
            chat.say(ada, "Ada", ChatBody::Emote { emote: Emote::Gg })
                .unwrap();
        }
        let refused = chat.say(ada, "Ada", ChatBody::Emote { emote: Emote::Gg });
        assert!(
            matches!(refused, Err(ChatError::RateLimited(_))),
            "{refused:?}"
        );
    }
}
