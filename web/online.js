// The table page's online-play parts: the players bar (presence, clocks, bots standing
// in), the "I'm back" banner, the page-visibility reports, and the pace picker of the
// lobby's create form. Clocks are the server's: each message says how long the running
// clock had left when it was sent, and the bar counts down from the moment it arrived.

import { h } from './dom.js';

/** The paces the lobby offers (the server accepts any within docs/protocol.md's bounds). */
export const PACES = [
  { id: 'untimed', label: 'Untimed (friends)', pace: { kind: 'untimed' } },
  { id: 'live', label: 'Live: 30 s a move + 2 min bank', pace: { kind: 'live', move_s: 30, bank_s: 120 } },
  { id: 'blitz', label: 'Blitz: 10 s a move + 30 s bank', pace: { kind: 'live', move_s: 10, bank_s: 30 } },
  { id: 'correspondence', label: 'Correspondence: 24 h a move', pace: { kind: 'correspondence', move_s: 86400 } },
];

/** The pace field of the create form: `[element, read]`. */
export function paceField() {
  const sel = h('select', { id: 'c-pace', testid: 'create-pace' },
    PACES.map((p) => h('option', { value: p.id }, p.label)));
  return [h('label', null, 'Pace', sel), () => PACES.find((p) => p.id === sel.value)?.pace ?? { kind: 'untimed' }];
}

/** "1:05", "0:09", "23 h 59 min". */
export function clockText(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

const PRESENCE = {
  connected: 'connected',
  away: 'away',
  disconnected: 'disconnected',
};

/**
 * The players bar of a table being played or over: one chip per seat with its presence,
 * its clock and a note when a bot plays for the player. `seatName(i)` names a seat.
 * Presence is told in words as well as by colour.
 */
export function playersBar(t, me, seatName) {
  return h('section', { class: 'players-bar', testid: 'players-bar', 'aria-label': 'Players' },
    t.seats.map((s, i) => {
      const clock = t.clocks?.[i];
      const presence = s.kind === 'player' ? s.presence ?? (s.connected ? 'connected' : 'disconnected') : null;
      return h('div', {
        class: `player-chip ${t.to_act.includes(i) ? 'on-turn' : ''} ${i === me ? 'me' : ''}`,
        testid: `player-${i}`,
        dataset: { presence: presence ?? 'bot' },
      },
      presence ? h('span', { class: `dot presence-${presence}`, title: PRESENCE[presence], testid: `presence-${i}` }) : null,
      h('span', { class: 'player-name' }, seatName(i), i === me ? ' (you)' : ''),
      s.bot_account ? h('span', { class: 'pill pill-bot', testid: `bot-account-${i}`, title: 'A bot account: a program plays this seat' }, 'BOT') : null,
      presence && presence !== 'connected' ? h('span', { class: 'muted small' }, ` ${PRESENCE[presence]}`) : null,
      s.stand_in ? h('span', { class: 'pill', testid: `stand-in-${i}`, title: 'A bot plays this seat until its player is back' }, 'bot playing') : null,
      s.abandoned ? h('span', { class: 'pill pill-abandoned' }, 'abandoned') : null,
      clock ? h('span', {
        class: `clock ${clock.left_ms !== null && clock.left_ms !== undefined ? 'running' : ''}`,
        testid: `clock-${i}`,
        dataset: { left: clock.left_ms ?? '', bank: clock.bank_ms },
        title: `time bank ${clockText(clock.bank_ms)}`,
      }, clock.left_ms !== null && clock.left_ms !== undefined ? clockText(clock.left_ms) : `bank ${clockText(clock.bank_ms)}`) : null);
    }));
}

const LOW_MS = 10_000;
let lowSaidAt = -Infinity;

/**
 * Counts the running clocks of `root` down from `receivedAt` (call every 250 ms). A clock
 * under 10 s is marked by more than its colour (a sign before the time), and when it is the
 * player's own, `say` tells a screen reader once (not again within 15 s: a patch during the
 * turn restarts the count from the server's figure, and must not repeat the warning).
 */
export function tickClocks(root, receivedAt, say = () => {}) {
  const gone = performance.now() - receivedAt;
  for (const el of root.querySelectorAll('.clock.running')) {
    const left = Number(el.dataset.left) - gone;
    const low = left < LOW_MS;
    el.textContent = `${low ? '⚠ ' : ''}${clockText(left)}`;
    el.classList.toggle('low', low);
    const now = performance.now();
    if (low && left > 0 && el.closest('.player-chip.me') && now - lowSaidAt > 15_000) {
      lowSaidAt = now;
      say(`Your clock: ${Math.ceil(left / 1000)} seconds left.`);
    }
  }
}

/** The banner shown to a player a bot is standing in for, with its "I'm back" button. */
export function standInBanner(t, me, back) {
  if (me === null || !t.seats[me]?.stand_in || t.status !== 'playing') return null;
  return h('div', { class: 'stand-in-banner', role: 'alert', testid: 'stand-in-banner' },
    'Your time ran out, so a bot is playing for you. ',
    h('button', { class: 'btn primary small', type: 'button', testid: 'im-back', onclick: back }, "I'm back"));
}

/** The notice of a parked table (its database writes fail; it retries by itself). */
export function parkedBanner(t) {
  if (!t.parked) return null;
  return h('div', { class: 'stand-in-banner', role: 'status', testid: 'parked-banner' },
    'The server cannot save moves right now, so this table is paused. It keeps trying by itself; nothing already played is lost.');
}

/**
 * Reports the page's visibility to the table (`presence`), now and on every change, and
 * returns the function that stops it.
 */
export function reportVisibility(send) {
  const tell = () => send({ type: 'presence', away: document.visibilityState === 'hidden' });
  document.addEventListener('visibilitychange', tell);
  return () => document.removeEventListener('visibilitychange', tell);
}
