// Direct challenges over the lobby socket (docs/protocol.md §4.2), loaded by the lobby when
// first needed and with the profile page:
// - challengeForm(): game, seats, the game's options and pace, for one opponent (a player
//   from their profile) or a choice of house bots (the lobby);
// - challengeCenter(): what is under way, in a live region at the corner of the page: an
//   incoming challenge with Accept / Decline, an outgoing one with Cancel and how it ended
//   (declined, expired…). On `challenge_started` the page goes to the new table.
// - profileChallenge(): the profile page's "Challenge" button, with a lobby socket of its
//   own while the page is shown (a challenge lives as long as the socket that sent it).

import { h, mount } from './dom.js';
import { gameModule } from './games/registry.js';
import { PACES } from './online.js';

const HOUSE = [['house:easy', 'House bot: easy'], ['house:normal', 'House bot: normal'], ['house:hard', 'House bot: hard']];

const ENDED = {
  declined: 'was declined',
  // Told to a player's other pages when one of them accepted.
  accepted: 'was accepted in another window',
  cancelled: 'was cancelled',
  expired: 'expired without an answer',
  gone: 'ended: the other side left the lobby',
  failed: 'could not start the match',
};

/** Lobby errors that refuse a `challenge` message (shown under its form). */
const CODES = ['unknown_player', 'self_challenge', 'player_offline', 'bad_player_count', 'bad_options', 'bad_pace',
  'too_many_challenges', 'unknown_game'];
/** …and those that refuse an accept, a decline or a cancel (shown on its card). */
const ANSWERS = ['challenge_not_found', 'not_your_challenge'];

let formCount = 0;

/**
 * A challenge form. `to`: a fixed opponent `{ id, name }`, or null to pick a house bot.
 * `submit(msg, label)` sends the `challenge` message and returns whether it went out.
 * Returns `{ el, error(message) }`.
 */
export function challengeForm({ games, title, to, submit }) {
  const n = ++formCount;
  const id = (x) => `ch${n}-${x}`;
  const playable = games.filter((g) => g.max_players >= 2 || !to);
  const gameSel = h('select', { id: id('game'), testid: 'ch-game' },
    playable.map((g) => h('option', { value: g.kind, selected: g.kind === 'trump' }, title(g.kind))));
  const seatsSel = h('select', { id: id('seats'), testid: 'ch-seats' });
  const optsBox = h('div', { class: 'create-options', testid: 'ch-options' });
  const paceSel = h('select', { id: id('pace'), testid: 'ch-pace' }, PACES.map((p) => h('option', { value: p.id }, p.label)));
  const whoSel = to ? null : h('select', { id: id('to'), testid: 'ch-to' },
    HOUSE.map(([v, l]) => h('option', { value: v, selected: v === 'house:normal' }, l)));
  const err = h('p', { class: 'form-error', role: 'alert', testid: 'ch-error' });
  let readOptions = () => null;
  let token = 0;
  const fillSeats = (mod) => {
    const g = playable.find((x) => x.kind === gameSel.value) ?? playable[0];
    // Two sides; a game of one seat only against the house (the program plays alone).
    const lo = to ? Math.max(2, g.min_players) : g.min_players;
    const keep = seatsSel.value;
    const counts = [];
    for (let k = lo; k <= g.max_players; k += 1) counts.push(k);
    mount(seatsSel, counts.map((k) => h('option', { value: String(k) }, mod?.seatLabel?.(k) ?? (k === 1 ? '1 player' : `${k} players`))));
    seatsSel.value = counts.includes(Number(keep)) ? keep : String(Math.max(lo, 2 <= g.max_players ? 2 : lo));
  };
  const pickGame = async () => {
    const my = ++token;
    readOptions = () => null;
    mount(optsBox);
    fillSeats(null);
    const mod = await gameModule(gameSel.value);
    if (my !== token) return;
    if (typeof mod.createOptions === 'function') {
      readOptions = mod.createOptions(optsBox) || (() => null);
      // The lobby's create form has the same fields: these get names of their own.
      for (const el of optsBox.querySelectorAll('[data-testid]')) el.dataset.testid = `ch-${el.dataset.testid.replace(/^create-/, '')}`;
    }
    fillSeats(mod);
  };
  gameSel.addEventListener('change', pickGame);
  pickGame();
  const rated = h('input', { type: 'checkbox', checked: true, testid: 'ch-rated' });
  const label = () => (to ? to.name : HOUSE.find(([v]) => v === whoSel.value)[1]);
  const form = h('form', { class: 'panel challenge-form', testid: to ? 'challenge-player-form' : 'challenge-form' },
    h('h2', null, to ? `Challenge ${to.name}` : 'Challenge a house bot'),
    to ? h('p', { class: 'muted small' }, `${to.name} gets it in the lobby, if they are there, and has a minute to accept.`) : null,
    h('div', { class: 'fields' },
      whoSel ? h('label', null, 'Opponent', whoSel) : null,
      h('label', null, 'Game', gameSel),
      h('label', null, 'Seats', seatsSel),
      optsBox,
      h('label', null, 'Pace', paceSel),
      h('label', null, 'Rated', rated)),
    h('p', { class: 'muted small' }, 'Seats beyond the two of you get house bots. An unrated match changes no rating.'),
    h('button', { class: 'btn primary', type: 'submit', testid: 'ch-submit' }, to ? 'Send the challenge' : 'Play the bot'),
    err);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    err.textContent = '';
    const msg = {
      type: 'challenge',
      to: to ? to.id : whoSel.value,
      game: gameSel.value,
      seats: Number(seatsSel.value),
      pace: PACES.find((p) => p.id === paceSel.value)?.pace ?? { kind: 'untimed' },
      rated: rated.checked,
    };
    const options = readOptions();
    if (options) msg.options = options;
    if (!submit(msg, label())) err.textContent = 'Not connected to the lobby yet: try again in a moment.';
  });
  return { el: form, error: (m) => { err.textContent = m; } };
}

/**
 * The challenges under way, in a live region at the page's corner. `send(msg)` writes to
 * the lobby socket; `onMessage(m)` takes every lobby message and says whether it was a
 * challenge's; `sent(label)` names the opponent of the next `challenge_sent`;
 * `error` receives a refusal of a challenge message. `stop()` removes the region.
 */
export function challengeCenter({ send, title, error }) {
  const box = h('div', { class: 'challenges', role: 'region', testid: 'challenges', 'aria-live': 'polite', 'aria-label': 'Challenges' });
  document.body.append(box);
  const cards = new Map(); // id → { el, timer }
  const labels = [];
  const remove = (id) => {
    const c = cards.get(id);
    if (!c) return;
    clearInterval(c.timer);
    c.el.remove();
    cards.delete(id);
  };
  const what = (c) => `${title(c.game)}, ${c.seats} seats, ${c.pace?.kind ?? 'untimed'}${c.rated === false ? ', unrated' : ''}`;
  const countdown = (c, el) => {
    const tick = () => { el.textContent = `${Math.max(0, Math.round((c.expires_at - Date.now()) / 1000))} s left`; };
    tick();
    return setInterval(tick, 1000);
  };
  const card = (id, kind, ...children) => {
    remove(id);
    const el = h('div', { class: `challenge-card challenge-${kind}`, role: 'group', 'aria-label': kind === 'in' ? 'Incoming challenge' : 'Your challenge', testid: kind === 'in' ? 'challenge-incoming' : 'challenge-outgoing', dataset: { id } }, ...children);
    box.append(el);
    return el;
  };
  const finish = (id, text) => {
    const c = cards.get(id);
    if (!c) return;
    clearInterval(c.timer);
    const close = h('button', { class: 'btn small', type: 'button', testid: 'challenge-dismiss', onclick: () => remove(id) }, 'OK');
    mount(c.el, h('p', { testid: 'challenge-result' }, text), close);
    c.timer = setTimeout(() => remove(id), 8000);
  };
  const incoming = (c) => {
    const left = h('span', { class: 'muted small' });
    const status = h('p', { class: 'small', role: 'status' });
    const accept = h('button', { class: 'btn primary small', type: 'button', testid: 'challenge-accept' }, 'Accept');
    const decline = h('button', { class: 'btn small', type: 'button', testid: 'challenge-decline' }, 'Decline');
    accept.addEventListener('click', () => {
      if (send({ type: 'challenge_accept', id: c.id })) {
        accept.disabled = true;
        decline.disabled = true;
        cards.get(c.id).answering = true;
        status.textContent = 'Starting…';
      }
    });
    decline.addEventListener('click', () => {
      if (send({ type: 'challenge_decline', id: c.id })) {
        accept.disabled = true;
        decline.disabled = true;
        cards.get(c.id).answering = true;
      }
    });
    const el = card(c.id, 'in',
      h('p', null, h('strong', null, c.from.name), c.from_bot ? [' ', h('span', { class: 'pill pill-bot', title: 'A bot account: a program plays' }, 'BOT')] : null,
        ` challenges you: ${what(c)}. `, left),
      h('div', { class: 'row' }, accept, decline), status);
    cards.set(c.id, { el, timer: countdown(c, left), dir: 'in', from: c.from.name });
  };
  const outgoing = (c, name) => {
    const left = h('span', { class: 'muted small' });
    const cancel = h('button', { class: 'btn small', type: 'button', testid: 'challenge-cancel' }, 'Cancel');
    cancel.addEventListener('click', () => {
      if (send({ type: 'challenge_cancel', id: c.id })) {
        cancel.disabled = true;
        cards.get(c.id).answering = true;
      }
    });
    const el = card(c.id, 'out', h('p', null, `You challenged ${name}: ${what(c)}. Waiting for an answer… `, left), h('div', { class: 'row' }, cancel));
    cards.set(c.id, { el, timer: countdown(c, left), dir: 'out', to: name });
  };
  const onMessage = (m) => {
    switch (m.type) {
      case 'challenge_received': incoming(m.challenge); return true;
      case 'challenge_sent': outgoing(m.challenge, labels.shift() ?? 'a player'); return true;
      case 'challenge_ended': {
        const c = cards.get(m.id);
        if (!c) return true;
        const reason = ENDED[m.reason] ?? m.reason;
        finish(m.id, c.dir === 'out' ? `Your challenge to ${c.to} ${reason}.` : `The challenge from ${c.from} ${reason}.`);
        return true;
      }
      case 'challenge_started':
        for (const id of [...cards.keys()]) remove(id);
        labels.length = 0;
        location.hash = `#/table/${m.table}`;
        return true;
      case 'error':
        if (ANSWERS.includes(m.code)) {
          // An answer or a cancel refused: the challenge is over for this page.
          for (const [id, c] of cards) if (c.answering) finish(id, m.message);
          return true;
        }
        if (!CODES.includes(m.code)) return false;
        labels.shift();
        error(m.message);
        return true;
      default: return false;
    }
  };
  const sent = (label) => labels.push(label);
  // A lobby socket that reconnects is a new connection: its challenges ended with the old one.
  const onReconnect = () => { for (const id of [...cards.keys()]) remove(id); labels.length = 0; };
  const stop = () => { for (const id of [...cards.keys()]) remove(id); box.remove(); };
  return { onMessage, sent, onReconnect, stop };
}

/**
 * The profile page's "Challenge" button for the player `to` ({ id, name }), shown to a
 * signed-in visitor who is someone else. Its lobby socket opens with the form and closes
 * when the page changes.
 */
export function profileChallenge({ games, title, to }) {
  // `games`: the catalogue, or a function that fetches it when the button is first used.
  const open = h('button', { class: 'btn primary', type: 'button', testid: 'profile-challenge', 'aria-expanded': 'false' }, `Challenge ${to.name}`);
  const slot = h('div', { class: 'profile-challenge' });
  let sock = null;
  let center = null;
  let form = null;
  const close = () => {
    sock?.close();
    center?.stop();
    sock = null;
    center = null;
    window.removeEventListener('hashchange', close);
  };
  open.addEventListener('click', async () => {
    if (form) {
      form.el.hidden = !form.el.hidden;
      open.setAttribute('aria-expanded', String(!form.el.hidden));
      return;
    }
    const [{ LiveSocket }, list] = await Promise.all([import('./socket.js'), typeof games === 'function' ? games() : games]);
    if (form) return;
    center = challengeCenter({ send: (m) => sock?.send(m) ?? false, title, error: (m) => form?.error(m) });
    sock = new LiveSocket('/ws/lobby', {
      onOpen: () => center?.onReconnect(),
      onMessage: (m) => { center?.onMessage(m); },
    });
    window.addEventListener('hashchange', close);
    form = challengeForm({
      games: list,
      title,
      to,
      submit: (msg, label) => {
        const ok = sock?.send(msg) ?? false;
        if (ok) center.sent(label);
        return ok;
      },
    });
    mount(slot, form.el);
    open.setAttribute('aria-expanded', 'true');
    form.el.querySelector('select')?.focus();
  });
  return h('div', { class: 'challenge-entry' }, open, slot);
}

/**
 * The lobby's challenges: the house-bot form, shown in `slot` on `open()`, and the live
 * region. `onMessage`, `onReconnect` and `stop` as for [`challengeCenter`].
 */
export function lobbyChallenges({ games, title, send, slot }) {
  let center = null;
  const form = challengeForm({ games, title, to: null, submit: (msg, label) => send(msg) && (center.sent(label), true) });
  center = challengeCenter({ send, title, error: form.error });
  const open = () => {
    if (form.el.isConnected) return;
    slot.replaceWith(form.el);
    form.el.querySelector('select')?.focus();
  };
  return { ...center, open };
}
