// A WebSocket that reconnects by itself with exponential backoff and reports its status.
// It carries no state of its own: on every connect the table server sends a full `state`
// (or, when the path names the version the page holds, a patch from it), so a reconnect
// is also a resync.

const MIN_DELAY = 500;
const MAX_DELAY = 15000;
const PING_EVERY = 25000;
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
    ws.onopen = () => {
      this.delay = MIN_DELAY;
      this.opts.onStatus?.('open');
      this.opts.onOpen?.();
      if (this.opts.ping) {
        // Keeps proxies from closing an idle socket while a player thinks.
        this.pinger = setInterval(() => this.send({ type: 'ping' }), PING_EVERY);
      }
    };
    ws.onmessage = (e) => {
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      this.opts.onMessage(msg);
    };
    ws.onclose = (e) => {
      clearInterval(this.pinger);
      this.pinger = null;
      if (this.ws !== ws) return;
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
    clearInterval(this.pinger);
    document.removeEventListener('visibilitychange', this.onVisible);
    window.removeEventListener('online', this.onVisible);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, 'leaving page');
    this.opts.onStatus?.('closed');
  }
}
