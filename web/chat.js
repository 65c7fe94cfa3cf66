// The chat panel of a table page and of the lobby: the latest lines, a text box, the quick
// reactions, and a mute toggle on each other player's name. The panel lives outside the
// part of the page that re-renders on every state, so what is being typed (and the focus)
// survives the game's updates; only its own list is redrawn, when chat arrives.
//
// The server decides who sees what (spectators' lines reach the players only after the
// match; muted players' lines reach nobody who muted them): the panel shows what it is
// sent. A `chat_history` replaces the list; a `chat` line is added unless its number is
// already shown.

import { h, mount } from './dom.js';

/** The quick reactions: their wire names and how they read. */
export const EMOTES = [
  ['gg', 'GG'],
  ['nice', 'Nice!'],
  ['oops', 'Oops'],
  ['thanks', 'Thanks'],
  ['hurry', 'Hurry up'],
  ['wow', 'Wow'],
];
const emoteText = (e) => EMOTES.find(([k]) => k === e)?.[1] ?? e;
/** What a line says: its text, or its reaction in words. */
const lineText = (l) => (l.kind === 'emote' ? emoteText(l.emote) : l.text);

/** The limits the server checks too (docs/protocol.md §3.7). */
const MAX_CHARS = 300;
// Control characters and invisible format characters (the zero-width joiner of emoji
// sequences is allowed).
// eslint-disable-next-line no-control-regex
const BAD_CHAR = /[\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200c\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]|\u{e0001}|[\u{e0020}-\u{e007f}]/u;

/** What the server would say of `raw`, or null when it is fine. */
export function checkText(raw) {
  const text = raw.trim();
  const n = [...text].length;
  if (n === 0) return 'Type something first.';
  if (n > MAX_CHARS) return `At most ${MAX_CHARS} characters (this is ${n}).`;
  if (BAD_CHAR.test(text)) return 'Line breaks and invisible formatting characters cannot be sent.';
  return null;
}

/** Codes of refusals that belong to the chat panel rather than to the game. */
const CHAT_CODES = new Set(['chat_empty', 'chat_too_long', 'chat_bad_character', 'chat_rate_limited', 'cannot_mute_self', 'player_not_found']);

/**
 * A chat panel.
 * @param {{title: string, me: () => ({id, name} | null), send: (msg) => boolean,
 *   testid?: string}} opts  `send` returns false when the socket is down.
 * @returns {{el: HTMLElement, onMessage(msg): boolean}} `onMessage` takes a socket
 *   message and says whether it was chat (handled here).
 */
export function chatPanel(opts) {
  let lines = []; // as the server sent them, oldest first
  let muted = new Set();
  let chatPending = false; // the last thing sent was chat: its refusal is ours
  // The list is drawn anew at each line: as a live region it made a screen reader read
  // every line again each time. The newest line alone is said, by `said`.
  const list = h('ol', { class: 'chat-lines', testid: 'chat-lines' });
  const said = h('p', { class: 'sr-only', 'aria-live': 'polite', testid: 'chat-announcer' });
  const error = h('p', { class: 'chat-error', testid: 'chat-error', role: 'alert' });
  const input = h('input', {
    type: 'text', class: 'chat-input', testid: 'chat-input', maxlength: String(MAX_CHARS * 2),
    placeholder: 'Say something…', 'aria-label': 'Chat message', autocomplete: 'off',
  });
  const sendBtn = h('button', { class: 'btn small', type: 'submit', testid: 'chat-send' }, 'Send');
  const form = h('form', { class: 'chat-form' }, input, sendBtn);
  const emotes = h('div', { class: 'chat-emotes' }, EMOTES.map(([e, label]) =>
    h('button', {
      class: 'btn small', type: 'button', testid: `chat-emote-${e}`, title: `React: ${label}`,
      onclick: () => send({ type: 'react', emote: e }),
    }, label)));
  const signedOut = h('p', { class: 'muted small chat-signed-out' }, 'Sign in to chat.');
  const el = h('aside', { class: 'panel chat-panel', testid: opts.testid ?? 'chat-panel' },
    h('h3', null, opts.title), list, said, error, form, emotes, signedOut);

  const showError = (text) => {
    error.textContent = text || '';
  };

  function send(msg) {
    showError('');
    if (!opts.send(msg)) {
      showError('Not connected: not sent.');
      return false;
    }
    chatPending = true;
    return true;
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const problem = checkText(input.value);
    if (problem) {
      showError(problem);
      return;
    }
    // Cleared once sent; the line shows when the server has stored it.
    if (send({ type: 'chat', text: input.value.trim() })) input.value = '';
    input.focus();
  });

  const toggleMute = (player) => {
    send({ type: muted.has(player) ? 'unmute' : 'mute', player });
  };

  function lineEl(l) {
    const me = opts.me();
    const mine = me && l.player === me.id;
    const name = mine
      ? h('span', { class: 'chat-name' }, l.name)
      : h('button', {
        class: `chat-name link ${muted.has(l.player) ? 'muted-player' : ''}`, type: 'button', testid: 'chat-mute',
        title: muted.has(l.player) ? `Unmute ${l.name}` : `Mute ${l.name} (only for you)`,
        disabled: !me, onclick: () => toggleMute(l.player),
      }, l.name);
    const time = new Date(l.at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    return h('li', { class: `chat-line ${l.spectator ? 'from-spectator' : ''} ${l.kind === 'emote' ? 'emote' : ''}`, testid: 'chat-line', dataset: { seq: String(l.seq) } },
      h('span', { class: 'chat-time muted small' }, time),
      name,
      l.spectator ? h('span', { class: 'pill small', title: 'watching, not playing' }, 'spectator') : null,
      h('span', { class: 'chat-text' }, lineText(l)));
  }

  function draw() {
    const signedIn = !!opts.me();
    form.hidden = !signedIn;
    emotes.hidden = !signedIn;
    signedOut.hidden = signedIn;
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    // A muted player's earlier lines go too; the server sends no more of them.
    mount(list, lines.filter((l) => !muted.has(l.player)).map(lineEl));
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function onMessage(m) {
    if (m.type === 'chat_history') {
      lines = m.lines;
      muted = new Set(m.muted);
    } else if (m.type === 'chat') {
      if (lines.some((l) => l.seq === m.line.seq)) return true;
      lines.push(m.line);
      if (!muted.has(m.line.player)) {
        const l = m.line;
        said.textContent = `${l.name}${l.spectator ? ' (watching)' : ''}: ${lineText(l)}`;
      }
      if (lines.length > 200) lines = lines.slice(-200);
      chatPending = false;
    } else if (m.type === 'muted') {
      muted = new Set(m.players);
      chatPending = false;
    } else if (m.type === 'error' && (CHAT_CODES.has(m.code) || (chatPending && m.code === 'unauthorized'))) {
      chatPending = false;
      showError(m.code === 'chat_rate_limited' && m.retry_after_ms
        ? `Slow down: try again in ${Math.ceil(m.retry_after_ms / 1000)} s.`
        : m.message);
      return true;
    } else {
      return false;
    }
    draw();
    return true;
  }

  draw();
  return { el, onMessage, redraw: draw };
}
