//! The queue of messages waiting to be written to one socket: bounded, and small while it
//! holds nothing.
//!
//! Every table socket has one for its texts, and every lobby socket one for what quick
//! play tells it, for as long as they are open: their size at rest is memory per socket.
//! tokio's bounded channel, which this replaces, allocates a block of 32 slots when it is
//! made (1,280 bytes for these messages) plus a shared part padded for its atomics,
//! whether anything is ever queued or not: about a fifth of an idle socket's heap
//! (jemalloc's counts by size class, `loadgen run --mode idle`). Here the messages wait in
//! a `VecDeque` that grows with what is queued and is given back when a burst has drained.
//!
//! The semantics are the channel's, as the table and the socket use them: senders may be
//! cloned, a weak sender does not keep the queue open, `try_send` refuses when the queue is
//! full or its receiver gone, and `recv` gives `None` once every sender is dropped and the
//! queue is empty (the table let go of the connection).
//!
//! Beside the messages, the table gives a socket back what its rate limit charged for a
//! move the game waited for ([`Sender::refund`]): such a move is no flood (`ws`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::Text;

/// A drained queue whose buffer has grown past this many slots gives it back.
const KEEP_SLOTS: usize = 8;

/// A bounded queue of `capacity` messages: its sending and receiving ends.
pub fn outbox<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            senders: 1,
            receiver: true,
        }),
        ready: Notify::new(),
        capacity,
        refunds: AtomicU32::new(0),
    });
    (Sender(shared.clone()), Receiver(shared))
}

#[derive(Debug)]
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Told when a message is queued or the last sender goes.
    ready: Notify,
    capacity: usize,
    /// Messages given back to the receiving socket's rate limit, not yet taken.
    refunds: AtomicU32,
}

#[derive(Debug)]
struct State<T> {
    queue: VecDeque<T>,
    /// Strong senders alive: at zero the queue is closed for sending.
    senders: usize,
    /// Whether the receiver is alive: without it, sending fails.
    receiver: bool,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing is left half-done under the lock: a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a message was not queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// `capacity` messages are waiting already: the reader has fallen behind.
    Full,
    /// The receiver is gone (the socket closed).
    Closed,
}

/// The sending end; clones share the queue.
#[derive(Debug)]
pub struct Sender<T = Text>(Arc<Shared<T>>);

impl<T> Sender<T> {
    /// Queues `text` unless the queue is full or its receiver gone. Never waits.
    pub fn try_send(&self, text: T) -> Result<(), Refused> {
        let mut s = self.0.lock();
        if !s.receiver {
            return Err(Refused::Closed);
        }
        if s.queue.len() >= self.0.capacity {
            return Err(Refused::Full);
        }
        s.queue.push_back(text);
        drop(s);
        self.0.ready.notify_one();
        Ok(())
    }

    /// Gives the receiving socket back one message of its rate limit: the one that
    /// carried a move the game waited for.
    pub fn refund(&self) {
        self.0.refunds.fetch_add(1, Relaxed);
    }

    /// A sender that does not keep the queue open.
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender(self.0.clone())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.0.lock().senders += 1;
        Sender(self.0.clone())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.senders -= 1;
        let last = s.senders == 0;
        drop(s);
        if last {
            // The receiver may be waiting: it now finds the queue closed.
            self.0.ready.notify_one();
        }
    }
}

/// A sender that does not keep the queue open: it sends only while a strong one lives.
#[derive(Debug)]
pub struct WeakSender<T = Text>(Arc<Shared<T>>);

impl<T> WeakSender<T> {
    /// A strong sender, unless every strong one is gone (the queue is closed).
    pub fn upgrade(&self) -> Option<Sender<T>> {
        let mut s = self.0.lock();
        if s.senders == 0 {
            return None;
        }
        s.senders += 1;
        Some(Sender(self.0.clone()))
    }
}

/// The receiving end (the socket's writer).
#[derive(Debug)]
pub struct Receiver<T = Text>(Arc<Shared<T>>);

impl<T> Receiver<T> {
    /// The next message; `None` once the queue is empty and every strong sender is gone.
    /// Cancel-safe: a message is taken off the queue only when it is returned.
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            match self.take() {
                Ok(text) => return Some(text),
                Err(true) => return None,
                // Notify keeps a permit for a message queued between the look and the
                // wait, so none is missed.
                Err(false) => self.0.ready.notified().await,
            }
        }
    }

    /// The messages given back ([`Sender::refund`]) since the last call.
    pub fn refunds(&self) -> u32 {
        self.0.refunds.swap(0, Relaxed)
    }

    /// The next message if one is waiting.
    pub fn try_recv(&mut self) -> Option<T> {
        self.take().ok()
    }

    /// Refuses every later message as `Closed`, as dropping the receiver does, and frees
    /// what was waiting.
    pub fn close(&mut self) {
        let mut s = self.0.lock();
        s.receiver = false;
        s.queue = VecDeque::new();
    }

    /// A message, or whether the queue is closed.
    fn take(&mut self) -> Result<T, bool> {
        let mut s = self.0.lock();
        match s.queue.pop_front() {
            Some(text) => {
                if s.queue.is_empty() && s.queue.capacity() > KEEP_SLOTS {
                    s.queue = VecDeque::new();
                }
                Ok(text)
            }
            None => Err(s.senders == 0),
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // What was waiting will never be written: free it now, not with the last sender.
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The queue is generic: its tests carry plain strings.
    fn text(s: &str) -> String {
        s.to_string()
    }

    #[tokio::test]
    async fn messages_come_out_in_order_up_to_the_bound() {
        let (tx, mut rx) = outbox::<String>(2);
        assert_eq!(tx.try_send(text("a")), Ok(()));
        assert_eq!(tx.try_send(text("b")), Ok(()));
        assert_eq!(tx.try_send(text("c")), Err(Refused::Full));
        assert_eq!(rx.recv().await.as_deref(), Some("a"));
        assert_eq!(tx.try_send(text("d")), Ok(()));
        assert_eq!(rx.try_recv().as_deref(), Some("b"));
        assert_eq!(rx.recv().await.as_deref(), Some("d"));
        assert_eq!(rx.try_recv(), None);
    }

    #[tokio::test]
    async fn it_closes_when_the_last_strong_sender_goes_and_is_drained() {
        let (tx, mut rx) = outbox::<String>(4);
        let weak = tx.downgrade();
        let other = weak.upgrade().expect("a strong sender lives");
        drop(tx);
        other.try_send(text("last")).unwrap();
        drop(other);
        // What was queued still comes out; then the end.
        assert_eq!(rx.recv().await.as_deref(), Some("last"));
        assert_eq!(rx.recv().await, None);
        assert!(weak.upgrade().is_none(), "a weak sender does not reopen it");
    }

    #[tokio::test]
    async fn a_waiting_receiver_wakes_for_a_message_and_for_the_close() {
        let (tx, mut rx) = outbox::<String>(4);
        let (got_tx, got) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(async move {
            let _ = got_tx.send(rx.recv().await);
            rx.recv().await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tx.try_send(text("x")).unwrap();
        // Woken by the message itself: the sender is still alive.
        let first = tokio::time::timeout(Duration::from_secs(5), got)
            .await
            .expect("woken by the message")
            .unwrap();
        assert_eq!(first.as_deref(), Some("x"));
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(tx);
        let end = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken by the close")
            .unwrap();
        assert_eq!(end, None);
    }

    #[tokio::test]
    async fn sending_fails_once_the_receiver_is_gone_and_its_queue_is_freed() {
        let (tx, rx) = outbox::<String>(4);
        tx.try_send(text("unread")).unwrap();
        let shared = tx.0.clone();
        drop(rx);
        assert_eq!(tx.try_send(text("more")), Err(Refused::Closed));
        assert_eq!(shared.lock().queue.capacity(), 0);
    }

    #[tokio::test]
    async fn a_drained_burst_gives_its_buffer_back() {
        let (tx, mut rx) = outbox::<String>(64);
        for i in 0..40 {
            tx.try_send(text(&i.to_string())).unwrap();
        }
        assert!(tx.0.lock().queue.capacity() >= 40);
        for _ in 0..40 {
            rx.recv().await.unwrap();
        }
        assert_eq!(tx.0.lock().queue.capacity(), 0);
        // A small queue keeps its buffer: no allocation per message at a steady pace.
        tx.try_send(text("a")).unwrap();
        rx.recv().await.unwrap();
        assert!(tx.0.lock().queue.capacity() > 0);
    }

    /// A receiver inside `select!` whose `recv` is dropped for another branch loses
    /// nothing: many senders and a receiver that keeps abandoning its wait.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nothing_is_lost_when_a_wait_is_abandoned() {
        let (tx, mut rx) = outbox::<String>(1_000_000);
        let senders: Vec<_> = (0..4)
            .map(|k| {
                let tx = tx.clone();
                tokio::spawn(async move {
                    for i in 0..2_000 {
                        tx.try_send(text(&format!("{k}:{i}"))).unwrap();
                        if i % 64 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let mut got = 0;
        let mut next = [0usize; 4];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the receiver stalled"
            );
            tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => {
                        let (k, i) = m.split_once(':').unwrap();
                        let (k, i): (usize, usize) = (k.parse().unwrap(), i.parse().unwrap());
                        assert_eq!(i, next[k], "each sender's messages in order");
                        next[k] += 1;
                        got += 1;
                    }
                    None => break,
                },
                _ = tokio::task::yield_now() => {}
            }
        }
        for s in senders {
            s.await.unwrap();
        }
        assert_eq!(got, 8_000);
    }
}
