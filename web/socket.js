// A WebSocket that reconnects by itself with exponential backoff and reports its status.
// It carries no state of its own: on every connect the table server sends a full `state`
// (or, when the path names the version the page holds, a patch from it), so a reconnect
// is also a resync.
//
// A link can die without closing (a phone changing networks, a router dropping packets):
// the browser then keeps saying the socket is open for minutes. So the page checks: every
// 25 s, and whenever the page wonders (a move without an answer), it pings and waits 8 s
// for anything to come back; silence means the link is dead, and the socket is dropped and
// opened afresh. A connection that does not open within 10 s is given up the same way.

const MIN_DELAY = 500;
const MAX_DELAY = 15000;
const PING_EVERY = 25000;
/** How long a ping may go without any message coming back before the link counts as dead. */
const ANSWER_WITHIN = 8000;
/** How long a connection may take to open. */
const OPEN_WITHIN = 10000;
/** The close code of a socket whose device was signed out. */
const SIGNED_OUT = 4001;

export class LiveSocket {
  /**
   * @param {string | () => string} path like '/ws/table/<id>?invite=x' (same host as the
   *   page), or a function giving it afresh at each connect
   * @param {{onMessage(msg), onStatus(status, detail), ping?: boolean}} opts
   *   status is 'connecting' | 'open' | 'waiting' (detail: ms until retry) | 'closed'
   */
  constructor(path, opts) {
    this.path = path;
    this.opts = opts;
    this.ws = null;
    this.delay = MIN_DELAY;
    this.timer = null;
    this.pinger = null;
    this.probing = null;
    this.opening = null;
    this.lastHeard = 0;
    this.stopped = false;
    this.onVisible = () => {
      // A phone waking up should not wait out a long backoff.
      if (document.visibilityState === 'visible' && !this.isOpen() && this.timer) this.retryNow();
    };
    document.addEventListener('visibilitychange', this.onVisible);
    window.addEventListener('online', this.onVisible);
    this.connect();
  }

  url() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const path = typeof this.path === 'function' ? this.path() : this.path;
    return `${proto}//${location.host}${path}`;
  }

  isOpen() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  connect() {
    this.timer = null;
    if (this.stopped) return;
    this.opts.onStatus?.('connecting');
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch {
      this.schedule();
      return;
    }
    this.ws = ws;
    this.opening = setTimeout(() => {
      if (this.ws === ws && ws.readyState === WebSocket.CONNECTING) this.drop();
    }, OPEN_WITHIN);
    ws.onopen = () => {
      clearTimeout(this.opening);
      this.lastHeard = performance.now();
      this.delay = MIN_DELAY;
      this.opts.onStatus?.('open');
      this.opts.onOpen?.();
      if (this.opts.ping) {
        // Keeps proxies from closing an idle socket while a player thinks.
        // Keeps proxies from closing an idle socket while a player thinks, and finds a
        // link that died without closing.
        this.pinger = setInterval(() => this.probe(), PING_EVERY);
      }
    };
    ws.onmessage = (e) => {
      this.lastHeard = performance.now();
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      this.opts.onMessage(msg);
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.stopTimers();
      this.ws = null;
      if (e.code === SIGNED_OUT) {
        // This device was signed out (here or from another device): reconnecting would
        // only come back as nobody. The page decides what to show.
        this.stopped = true;
        this.opts.onStatus?.('closed');
        window.dispatchEvent(new Event('fib:signed-out'));
        return;
      }
      this.schedule();
    };
    ws.onerror = () => {
      // onclose follows and schedules the retry.
    };
  }

  stopTimers() {
    clearInterval(this.pinger);
    clearTimeout(this.probing);
    clearTimeout(this.opening);
    this.pinger = this.probing = this.opening = null;
  }

  /**
   * Asks the server for a sign of life (a ping, answered by a pong; any message will do).
   * If none comes within 8 s, the link is dead: the socket is dropped and opened afresh,
   * and the page hears 'waiting' as for any lost connection. Only for sockets opened with
   * `ping` (the table's: the lobby socket has no ping).
   */
  probe() {
    if (!this.opts.ping || !this.isOpen() || this.probing) return;
    const asked = performance.now();
    this.send({ type: 'ping' });
    this.probing = setTimeout(() => {
      this.probing = null;
      if (this.lastHeard < asked) this.drop();
    }, ANSWER_WITHIN);
  }

  /** Gives up the current socket without waiting for the browser to notice it is dead. */
  drop() {
    const ws = this.ws;
    this.ws = null;
    this.stopTimers();
    if (ws) {
      ws.onclose = ws.onmessage = ws.onopen = null;
      try {
        ws.close(4000, 'no answer');
      } catch {
        // A socket still connecting may refuse a close code; it is forgotten either way.
      }
    }
    this.schedule();
  }

  schedule() {
    if (this.stopped) return;
    // Jitter spreads out the reconnects of many clients after a server restart.
    const wait = Math.round(this.delay * (0.75 + Math.random() * 0.5));
    this.delay = Math.min(this.delay * 2, MAX_DELAY);
    this.opts.onStatus?.('waiting', wait);
    this.timer = setTimeout(() => this.connect(), wait);
  }

  retryNow() {
    clearTimeout(this.timer);
    this.delay = MIN_DELAY;
    this.connect();
  }

  /** Sends a message if the socket is open; returns whether it was sent. */
  send(obj) {
    if (!this.isOpen()) return false;
    this.ws.send(JSON.stringify(obj));
    return true;
  }

  close() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopTimers();
    document.removeEventListener('visibilitychange', this.onVisible);
    window.removeEventListener('online', this.onVisible);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, 'leaving page');
    this.opts.onStatus?.('closed');
  }
}
