// Accounts and quick play in the browser.
//
// - signInWithAccount(): the form on the welcome page for someone who claimed an account
//   elsewhere (username + password); the server sets this browser's cookie.
// - accountPage(): #/account. A guest claims an account here; a signed-in player sees the
//   devices signed in as them and signs any of them out (or this one).
// - quickPlayPanel(): the lobby's "Play now": pick a game and a player count, wait in the
//   queue (with how many wait and about how long), or play bots now; the lobby socket says
//   `matched` with the table to go to.

import { deckControl, h, mount } from './dom.js';
import { api } from './api.js';

const when = (ms) => new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The sign-in form for an existing account; `done(player)` after signing in. */
export function signInWithAccount(done) {
  const user = h('input', { id: 'si-user', name: 'username', type: 'text', required: true, autocomplete: 'username', maxlength: '24', testid: 'signin-username' });
  const pass = h('input', { id: 'si-pass', name: 'password', type: 'password', required: true, autocomplete: 'current-password', maxlength: '128', testid: 'signin-password' });
  const err = h('p', { class: 'form-error', role: 'alert', testid: 'signin-error' });
  const form = h('form', { class: 'panel signin', testid: 'account-signin-form' },
    h('h2', null, 'Have an account?'),
    h('p', null, 'Sign in to play as yourself, with your history and ratings, on this device too.'),
    h('label', { for: 'si-user' }, 'Username'), user,
    h('label', { for: 'si-pass' }, 'Password'), pass,
    h('div', { class: 'row' }, h('button', { class: 'btn', type: 'submit', testid: 'signin-submit' }, 'Sign in')),
    err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      const res = await api.signIn(user.value, pass.value);
      pass.value = '';
      done(res.player);
    } catch (ex) {
      err.textContent = ex.message;
    }
  });
  return form;
}

/** #/account: claim (a guest), or the account and its devices. */
export async function accountPage(app, { stale, signedOut }) {
  mount(app, h('p', { class: 'muted' }, 'Loading your account…'));
  const [account, devices] = await Promise.all([api.account(), api.devices()]);
  if (stale()) return;
  const err = h('p', { class: 'form-error', role: 'alert', testid: 'account-error' });
  let top;
  if (account.username === null) {
    const user = h('input', { id: 'cl-user', name: 'username', type: 'text', required: true, autocomplete: 'username', maxlength: '24', testid: 'claim-username' });
    const pass = h('input', { id: 'cl-pass', name: 'password', type: 'password', required: true, autocomplete: 'new-password', minlength: '10', maxlength: '128', testid: 'claim-password' });
    top = h('form', { class: 'panel signin', testid: 'claim-form' },
      h('h1', null, 'Keep this player'),
      h('p', null, `You play as the guest “${account.player.name}” on this browser only. Choose a username and a password to sign in as this player on any device, with your matches and ratings.`),
      h('label', { for: 'cl-user' }, 'Username (3–24 letters, digits, _ . -)'), user,
      h('label', { for: 'cl-pass' }, 'Password (at least 10 characters)'), pass,
      h('div', { class: 'row' }, h('button', { class: 'btn primary', type: 'submit', testid: 'claim-submit' }, 'Create my account')),
      err);
    top.addEventListener('submit', async (e) => {
      e.preventDefault();
      err.textContent = '';
      try {
        await api.claim(user.value, pass.value);
        accountPage(app, { stale, signedOut });
      } catch (ex) {
        err.textContent = ex.message;
      }
    });
  } else {
    top = h('section', { class: 'panel' },
      h('h1', null, 'Your account'),
      h('p', { testid: 'account-username' }, `Signed in as ${account.username} (shown to others as “${account.player.name}”).`),
      h('p', null, h('a', { href: `#/players/${account.player.id}` }, 'Your profile')));
  }
  const out = async (id, current) => {
    err.textContent = '';
    try {
      if (current) {
        await api.signOut();
        signedOut();
      } else {
        await api.revokeDevice(id);
        accountPage(app, { stale, signedOut });
      }
    } catch (ex) {
      err.textContent = ex.message;
    }
  };
  const list = h('section', { class: 'panel', testid: 'devices' },
    h('h2', null, 'Signed-in devices'),
    h('p', { class: 'muted small' }, 'Signing a device out stops it at once, open games included.'),
    h('ul', { class: 'devices' }, devices.map((d) => h('li', { testid: 'device', dataset: { current: String(d.current) } },
      h('span', null, h('strong', null, d.label), d.current ? ' (this device)' : ''),
      h('span', { class: 'muted small' }, ` signed in ${when(d.created_at)}, last seen ${when(d.last_seen_at)} `),
      // A guest's only device cannot sign out: nothing could sign back in as it.
      account.username !== null || !d.current
        ? h('button', { class: 'btn small', type: 'button', testid: d.current ? 'signout-here' : 'device-signout', onclick: () => out(d.id, d.current) },
          d.current ? 'Sign out' : 'Sign out this device')
        : null))),
    account.username === null ? err : null);
  const display = h('section', { class: 'panel', testid: 'display-prefs' },
    h('h2', null, 'Display'),
    h('p', { class: 'muted small' }, 'Remembered in this browser. The four-colour deck gives each Fib-Fibonacci suit its own colour and draws the other games’ colours in a palette that colour-blind players can tell apart.'),
    deckControl());
  // A claimed account's bot section (docs/protocol.md §2.26) loads with the page only.
  const bots = account.username === null ? null
    : (await import('./bots.js')).botSection(account, devices, () => accountPage(app, { stale, signedOut }));
  if (stale()) return;
  mount(app, h('div', { class: 'account' }, top, list, account.username !== null ? err : null, bots, display));
}

/**
 * The lobby's "Play now" panel. `send(msg)` writes to the lobby socket; the lobby page
 * hands every lobby message to the returned `onMessage` (true when it was quick play's).
 */
export function quickPlayPanel({ games, title, send }) {
  const choices = [];
  for (const g of games) {
    for (let n = Math.max(1, g.min_players); n <= g.max_players; n += 1) {
      choices.push({ game: g.kind, seats: n, label: n === 1 ? `${title(g.kind)}: solo` : `${title(g.kind)}, ${n} players` });
    }
  }
  const pick = h('select', { id: 'qp-pick', testid: 'qp-pick' },
    choices.map((c, i) => h('option', { value: String(i), selected: c.game === 'trump' && c.seats === 2 }, c.label)));
  // Neither the queue counts nor the countdown are live regions: rewritten every second,
  // they had a screen reader speak every second. `said` tells each change of state once.
  const info = h('p', { class: 'muted small', testid: 'qp-info' });
  const status = h('p', { testid: 'qp-status' });
  const said = h('p', { class: 'sr-only', 'aria-live': 'polite', testid: 'qp-announcer' });
  const err = h('p', { class: 'form-error', role: 'alert', testid: 'qp-error' });
  const playNow = h('button', { class: 'btn primary', type: 'button', testid: 'qp-play' }, 'Play now');
  const botsNow = h('button', { class: 'btn', type: 'button', testid: 'qp-bots' }, 'Play bots now');
  const leave = h('button', { class: 'btn', type: 'button', testid: 'qp-leave', hidden: true }, 'Leave the queue');
  let queues = [];
  let queued = null; // the `queued` message while waiting
  let ticker = null;
  const chosen = () => choices[Number(pick.value)];
  const secs = (ms) => `${Math.max(1, Math.round(ms / 1000))} s`;
  const showInfo = () => {
    const c = chosen();
    if (c.seats === 1) return mount(info, 'Starts at once.');
    const q = queues.find((x) => x.game === c.game && x.seats === c.seats);
    if (!q) return mount(info, '');
    // While this player waits in it, the pool's estimate is for a newcomer, not for them:
    // their own is in the status line.
    if (queued && queued.game === c.game && queued.seats === c.seats) {
      return mount(info, `${q.waiting} waiting, you included`);
    }
    mount(info, `${q.waiting} waiting · about ${secs(q.expected_wait_ms)}`);
  };
  const showWaiting = () => {
    clearInterval(ticker);
    const waiting = queued !== null;
    // The button pressed is about to be hidden: the focus goes to the one that replaces
    // it, not to the page's body.
    const hadFocus = [playNow, botsNow, leave].includes(document.activeElement);
    const wasWaiting = !leave.hidden;
    playNow.hidden = waiting;
    botsNow.hidden = waiting;
    pick.disabled = waiting;
    leave.hidden = !waiting;
    if (hadFocus) (waiting ? leave : playNow).focus();
    if (waiting && !wasWaiting) {
      said.textContent = `Looking for players; bots take the empty seats in ${secs(queued.bot_fill_ms - (Date.now() - queued.joined_at))} if nobody comes.`;
    } else if (!waiting && wasWaiting) {
      said.textContent = 'You are no longer in the queue.';
    }
    if (!waiting) return mount(status);
    const tick = () => {
      const waited = Date.now() - queued.joined_at;
      const left = queued.bot_fill_ms - waited;
      const expected = queued.expected_wait_ms - waited;
      const soon = expected > 0 && queued.expected_wait_ms < queued.bot_fill_ms ? ` A match is expected in about ${secs(expected)}.` : '';
      mount(status, `Looking for players… ${secs(waited)} so far; ${left > 0 ? `bots take the empty seats in ${secs(left)}` : 'bots are joining'}.${soon}`);
    };
    tick();
    ticker = setInterval(tick, 1000);
  };
  const join = (botsNowFlag) => {
    err.textContent = '';
    const c = chosen();
    if (!send({ type: 'queue_join', game: c.game, seats: c.seats, bots_now: botsNowFlag })) {
      err.textContent = 'Not connected to the lobby yet: try again in a moment.';
    }
  };
  playNow.addEventListener('click', () => join(false));
  botsNow.addEventListener('click', () => join(true));
  leave.addEventListener('click', () => send({ type: 'queue_leave' }));
  pick.addEventListener('change', showInfo);
  const el = h('section', { class: 'panel quickplay', testid: 'quickplay' },
    h('h2', null, 'Play now'),
    h('label', { for: 'qp-pick' }, 'Game'), pick, info,
    h('div', { class: 'row' }, playNow, botsNow, leave),
    status, said, err);
  showInfo();
  const onMessage = (m) => {
    switch (m.type) {
      case 'queues': queues = m.queues; showInfo(); return true;
      case 'queued': queued = m; showWaiting(); showInfo(); return true;
      case 'queue_left': queued = null; showWaiting(); showInfo(); return true;
      case 'matched':
        queued = null;
        showWaiting();
        location.hash = `#/table/${m.table}`;
        return true;
      // A challenge accepted (docs/protocol.md §4.2): both sides go to the new table.
      case 'challenge_started':
        location.hash = `#/table/${m.table}`;
        return true;
      case 'error':
        if (['already_queued', 'not_queued', 'not_signed_in', 'unknown_game', 'bad_player_count', 'in_live_match'].includes(m.code)) {
          err.textContent = m.message;
          return true;
        }
        return false;
      default: return false;
    }
  };
  // A lobby socket that reconnects is a new connection: it no longer waits.
  const onReconnect = () => { queued = null; showWaiting(); };
  const stop = () => clearInterval(ticker);
  return { el, onMessage, onReconnect, stop };
}

/**
 * The other seats of a match row (`opponents`, docs/protocol.md §2.6): names, a **BOT**
 * pill for a bot account, and the house bots by level.
 */
export function opponentsOf(r) {
  const parts = (r.opponents ?? []).map((o) => (o.kind === 'bot'
    ? h('span', { class: 'muted' }, `bot (${o.level})`)
    : h('span', { testid: 'opponent', dataset: { bot: String(!!o.bot_account) } }, o.name,
      o.bot_account ? [' ', h('span', { class: 'pill pill-bot', title: 'A bot account: a program played this seat' }, 'BOT')] : null)));
  // One element: in a flex row (the profile's recent matches) loose pieces were spaced
  // apart, "bot (normal) , bot (normal)".
  return h('span', { class: 'opponents' }, parts.length ? parts.flatMap((p, i) => (i ? [', ', p] : [p])) : '—');
}

/** A player's finished public matches, each with its replay, for the profile page. */
export function recentMatches(rows, title) {
  return h('section', { class: 'panel', testid: 'recent-matches' },
    h('h2', null, 'Recent matches'),
    rows.length === 0 ? h('p', { class: 'muted' }, 'No finished public matches yet.')
      : h('ul', { class: 'recent' }, rows.map((r) => h('li', { testid: 'recent-match' },
        `${title(r.game)} · ${r.won === true ? 'won' : r.won === false ? 'lost' : r.status} · score ${r.score} · vs `,
        opponentsOf(r), ` · ${when(r.updated_at)} · `,
        h('a', { href: `#/replay/${r.table_id}`, testid: 'recent-replay' }, 'replay')))));
}
