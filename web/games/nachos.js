// Fibonachos at the table: the spicy card at stake, the trick in progress (with the
// fibonachos "activated" once a second one lands, and who is winning it), every seat's
// spicy pile, the viewer's hand with the playable cards raised (taken from `legal`, never
// re-derived here), the round summary (raw spicy total, Fibonacci bonus or the 34) and the
// running totals over the three rounds. Rendered wholly from the latest state message.

import { flyTrick, h, matchWords, morph, mount, phoneLayout, plateName, roundWords, sameSeats, scrollBox } from '../dom.js';

export const title = 'Fibonachos';

/** A refusal of the server in the player's words. */
export function explainError(err, view) {
  if (err.code === 'must_follow_suit') {
    const led = view?.lead_suit;
    return led ? `You must follow ${led}: you hold a ${led} card, so play one of them.` : 'You must follow the suit that was led.';
  }
  if (err.code === 'not_your_turn') return 'It is not your turn yet.';
  return null;
}

/** The events of one update in words, for the screen-reader live region. */
export function describe(events, seatName, me) {
  const who = (s) => (s === me ? 'You' : seatName(s));
  const lines = [];
  for (const e of events) {
    if (e.type === 'card_played' && e.card) lines.push(`${who(e.seat)} played ${e.card.suit} ${e.card.number}.`);
    else if (e.type === 'trick_won') lines.push(`${who(e.winner ?? e.seat)} won the trick.`);
    else if (e.type === 'round_ended') lines.push(roundWords(e, who));
    else if (e.type === 'match_ended') lines.push(matchWords(e.winners, e.totals, who));
  }
  return lines.join(' ');
}

// The module's own stylesheet, added to the page once (no build step, no shared CSS edit).
let cssAdded = false;
function addCss() {
  if (cssAdded) return;
  cssAdded = true;
  document.head.appendChild(h('link', { rel: 'stylesheet', href: new URL('./nachos.css', import.meta.url).href }));
}

// Which round summary the player closed, per table, so the banner does not come back on
// every state message but does appear again for the next round.
const dismissed = new Map();

const SUITS = ['red', 'green', 'yellow'];
const cap = (s) => (s ? s[0].toUpperCase() + s.slice(1) : '');
const sameCard = (a, b) => !!a && !!b && a.suit === b.suit && a.number === b.number && (a.copy ?? 0) === (b.copy ?? 0);
const cardText = (c) => `${c.suit} ${c.number}${c.fibonacho ? ' (fibonacho)' : ''}`;

// ---------------------------------------------------------------------------------------
// Small drawings (SVG built node by node: nothing is parsed from strings)
// ---------------------------------------------------------------------------------------

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const k of kids) el.appendChild(k);
  return el;
}

/** The fibonacho mark: a golden Fibonacci spiral (quarter arcs of radius 1, 2, 3, 5, 8). */
function spiral() {
  return svg('svg', { viewBox: '4.5 3.5 16 11', class: 'nc-spiral', 'aria-hidden': 'true', focusable: 'false' },
    svg('path', {
      d: 'M10 10 a1 1 0 0 1 1 1 a2 2 0 0 1 -2 2 a3 3 0 0 1 -3 -3 a5 5 0 0 1 5 -5 a8 8 0 0 1 8 8',
      fill: 'none', stroke: 'currentColor', 'stroke-width': '1.6', 'stroke-linecap': 'round',
    }));
}

/** A chili pepper, the sign of spicy cards. */
function chili() {
  return svg('svg', { viewBox: '0 0 24 24', class: 'chili', 'aria-hidden': 'true', focusable: 'false' },
    svg('path', { d: 'M15.5 5.5 C20.5 6.5 20 13 15 17.5 C11 21 6 22 2.5 21 C7.5 19 10 15 11 10.5 C11.8 7 13 5.3 15.5 5.5 Z', fill: '#d63a1c' }),
    svg('path', { d: 'M14.5 6 C14.5 4 15.5 2.5 17.5 2', fill: 'none', stroke: '#2e8b3a', 'stroke-width': '2', 'stroke-linecap': 'round' }),
    svg('path', { d: 'M13.5 8.5 C14.5 8 15.5 8.2 16 9', fill: 'none', stroke: '#ffb29c', 'stroke-width': '1.2', 'stroke-linecap': 'round' }));
}

/**
 * A nacho card. opts: {size: 'xs'|'sm'|'md'|'lg', playable, onClick, testid, extraClass}.
 * Clickable cards are <button>s so they work with the keyboard too.
 */
function nachoEl(c, opts = {}) {
  const suit = SUITS.includes(c.suit) ? c.suit : 'unknown';
  const clickable = typeof opts.onClick === 'function';
  const cls = ['ncard', `ncard-${suit}`, `ncard-${opts.size || 'md'}`];
  if (c.fibonacho) cls.push('fib');
  if (opts.playable) cls.push('playable');
  if (opts.extraClass) cls.push(opts.extraClass);
  const label = cardText(c) + (opts.playable ? ', playable' : '');
  return h(clickable ? 'button' : 'div', {
    class: cls.join(' '),
    type: clickable ? 'button' : null,
    role: clickable ? null : 'img',
    testid: opts.testid,
    dataset: {
      suit: c.suit,
      number: String(c.number),
      copy: String(c.copy ?? 0),
      fibonacho: String(!!c.fibonacho),
      ...(opts.playable !== undefined ? { playable: String(!!opts.playable) } : {}),
    },
    // A picture is named by its label; a button by its (hidden) text.
    'aria-label': clickable ? null : label,
    title: label,
    disabled: clickable && !opts.playable && !opts.explain,
    'aria-disabled': clickable && !opts.playable && opts.explain ? 'true' : null,
    onclick: clickable ? () => opts.onClick(c) : null,
  },
    h('span', { class: 'nc-corner', 'aria-hidden': 'true' }, String(c.number)),
    // The suit's initial: suits are told apart without colour vision too.
    h('span', { class: 'nc-mark', 'aria-hidden': 'true', testid: 'colour-mark' }, (c.suit || '?')[0].toUpperCase()),
    h('span', { class: 'nc-num', 'aria-hidden': 'true' }, String(c.number)),
    c.fibonacho ? h('span', { class: 'nc-fib', 'aria-hidden': 'true' }, spiral()) : null,
    clickable ? h('span', { class: 'sr-only' }, label) : null);
}

/** A spicy card: its value with a chili; `null` value draws it face down. */
function spicyEl(value, size = 'md', testid = null) {
  if (value === null || value === undefined) {
    return h('div', { class: `spicy spicy-${size} spicy-back`, role: 'img', testid, 'aria-label': 'spicy card, face down' });
  }
  return h('div', {
    class: `spicy spicy-${size}`, role: 'img', testid, dataset: { value: String(value) },
    'aria-label': `spicy card worth ${value}`, title: `spicy ${value}`,
  }, chili(), h('span', { class: 'spicy-val' }, String(value)));
}

// ---------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------

export function render(root, msg, ctx) {
  addCss();
  const v = msg.view;
  if (!v) {
    mount(root, h('p', { class: 'muted' }, 'The match has not started yet.'));
    return;
  }
  const n = v.players;
  const me = ctx.mySeat;
  const legal = (msg.legal || []).filter((a) => a?.type === 'play' && a.card);
  const legalFor = (c) => legal.find((a) => sameCard(a.card, c));
  const myTurn = me !== null && v.turn === me && legal.length > 0;
  const name = (s) => (s === me ? `${ctx.seatName(s)} (you)` : ctx.seatName(s));
  const tricksDone = v.spicy_piles.reduce((k, p) => k + p.cards.length, 0);
  const over = Array.isArray(v.winners);

  const parts = [];

  // --- Final result of the match ------------------------------------------------------
  if (over) {
    // The table's winners: the game's, unless a seat abandoned (it never wins, §1.6).
    const won = Array.isArray(msg.table?.winners) ? msg.table.winners : v.winners;
    const iWon = me !== null && won.includes(me);
    const who = won.map(name).join(' and ');
    parts.push(h('section', { class: `banner final ${iWon ? 'won' : ''}`, testid: 'match-result' },
      h('h2', null, iWon ? (won.length > 1 ? 'You share the win!' : 'You won the match!') : `${who} won the match`),
      h('p', null, 'Final totals: ', v.totals.map((t, s) => ({ t, s })).sort((a, b) => b.t - a.t)
        .map(({ t, s }) => `${name(s)} ${t}`).join(' · ')),
      sameSeats(won, v.winners) ? null : h('p', { class: 'small' }, 'A player who abandoned the match cannot win it: the win goes to those who stayed.')));
  }

  // --- Round summary (until closed, or until the next round's first trick is done) -------
  const lr = v.last_round;
  if (lr && (over || (dismissed.get(ctx.tableId) !== lr.round && tricksDone === 0))) {
    parts.push(roundSummary(lr, name, over ? null : () => {
      dismissed.set(ctx.tableId, lr.round);
      root.querySelector('[data-testid="round-summary"]')?.remove();
    }));
  }

  // --- Round facts ------------------------------------------------------------------------
  parts.push(h('section', { class: 'nachos-info', testid: 'round-info' },
    fact('Round', h('strong', { testid: 'round-no' }, String(v.round)), ` of ${v.rounds}`),
    v.dealer !== null && v.dealer !== undefined ? fact('Dealer', name(v.dealer)) : null,
    fact('Trick', over ? '—' : `${Math.min(tricksDone + 1, v.hand_size)} of ${v.hand_size}`),
    fact('Spicy deck', h('span', { testid: 'spicy-remaining' }, String(v.spicy_remaining)), ' face down'),
    v.set_aside_count ? fact('Set aside', `${v.set_aside_count} unseen`) : null));

  // --- Seats with their spicy piles -------------------------------------------------------
  parts.push(h('section', { class: 'nachos-seats', testid: 'seats' },
    Array.from({ length: n }, (_, s) => seatPlate(v, s, me, name))));

  // --- The trick ------------------------------------------------------------------------
  // On a phone the reminder of the last trick comes after the hand instead of beside the
  // trick: with five seats the hand would not be in the first screen otherwise (the page
  // is drawn again when it crosses the breakpoint).
  const phone = phoneLayout();
  parts.push(h('div', { class: 'nachos-centre' }, trickArea(v, name, tricksDone, over, msg.events || []), phone ? null : lastTrick(v, name)));

  // --- My hand --------------------------------------------------------------------------
  if (v.hand) {
    const hint = myTurn
      ? (ctx.busy ? 'Sending…' : v.lead_suit
        ? `Your turn: ${cap(v.lead_suit)} was led; the raised cards are the ones you may play.`
        : 'Your turn to lead: play any card.')
      : v.turn !== null && v.turn !== undefined ? `Waiting for ${name(v.turn)}.` : '';
    parts.push(h('section', { class: `nachos-hand-area ${myTurn ? 'my-turn' : ''}` },
      h('div', { class: 'hand-head' }, h('h3', null, `Your hand (${v.hand.length})`), h('span', { class: 'muted', testid: 'hand-hint' }, hint)),
      h('div', { class: 'nachos-hand', testid: 'hand' },
        v.hand.length === 0 ? h('span', { class: 'muted' }, 'No cards.') : null,
        v.hand.map((c) => {
          const a = legalFor(c);
          const ok = myTurn && !ctx.busy && !!a;
          return nachoEl(c, {
            size: 'lg',
            playable: ok,
            // On your turn a card you may not play can still be pressed: the server's
            // refusal then says why (the lead suit must be followed).
            explain: myTurn && !ctx.busy,
            testid: 'hand-card',
            extraClass: myTurn && !a ? 'dim' : '',
            // Send exactly the legal action the server listed for this card (or, for
            // another card, the move as asked, for the server to refuse).
            onClick: () => ctx.act(a ?? { type: 'play', card: { suit: c.suit, number: c.number, copy: c.copy ?? 0 } }),
          });
        })),
      h('p', { class: 'legend muted small' }, h('span', { class: 'legend-fib' }, spiral()), ' marks a fibonacho (1, 2, 3, 5, 8, 13).')));
  } else {
    parts.push(h('p', { class: 'muted spectating' }, 'You are watching this match.'));
  }

  if (phone) parts.push(lastTrick(v, name));

  // --- Scores over the three rounds -------------------------------------------------------
  parts.push(scoresTable(v, name));

  morph(root, h('div', { class: `nachos ${myTurn ? 'my-turn' : ''}`, testid: 'nachos-table' }, parts));
  flyTrick(root.querySelector('[data-testid="trick"]'), '.nplayed', v.last_trick ? root.querySelector(`[data-testid="seat-${v.last_trick.winner}"]`) : null);
}

function fact(label, ...value) {
  return h('div', { class: 'fact' }, h('span', { class: 'muted small' }, label), h('span', { class: 'fact-val' }, value));
}

function seatPlate(v, s, me, name) {
  const pile = v.spicy_piles[s] ?? { cards: [], total: 0 };
  return h('div', {
    class: ['nseat', v.turn === s ? 'turn' : '', s === me ? 'me' : '', v.winners?.includes(s) ? 'winner' : ''].join(' '),
    testid: `seat-${s}`,
    dataset: { turn: String(v.turn === s) },
  },
    h('div', { class: 'nseat-name' }, h('span', { class: 'nseat-who' }, plateName(name(s), s === me)),
      v.dealer === s ? h('span', { class: 'chip', title: 'dealer' }, 'D') : null),
    h('div', { class: 'nseat-stats' },
      h('span', { title: 'cards in hand' }, h('span', { class: 'mini-back' }), ` ${v.hand_counts[s] ?? 0}`),
      h('span', { title: 'match total' }, h('strong', { testid: `total-${s}` }, String(v.totals[s] ?? 0)), ' pts')),
    h('div', { class: 'pile', testid: `pile-${s}`, dataset: { total: String(pile.total), count: String(pile.cards.length) }, title: 'spicy cards won this round' },
      pile.cards.length === 0
        // A phone shows "0" as the count, as for a seat that won some: words that wrap
        // on one plate and not on the next would move the hand (nachos.css).
        ? [h('span', { class: 'muted small pile-none' }, v.phase === 'playing' ? 'no spicy yet' : 'no spicy'),
          h('span', { class: 'pile-count muted', title: 'spicy cards won' }, h('span', { class: 'mini-spicy' }), ' 0')]
        // A phone shows the count instead of the cards (nachos.css): a plate's height must
        // not grow with the tricks its seat wins.
        : [pile.cards.map((x) => spicyEl(x, 'xs')),
          h('span', { class: 'pile-count', title: 'spicy cards won' }, h('span', { class: 'mini-spicy' }), ` ${pile.cards.length}`),
          h('span', { class: 'pile-total' }, `= ${pile.total}`)]),
    v.turn === s ? h('div', { class: 'turn-tag' }, s === me ? 'your turn' : 'to play') : null);
}

function trickArea(v, name, tricksDone, over, events) {
  const box = h('section', { class: 'nachos-trick', testid: 'trick', dataset: { active: String(!!v.fibonachos_active) } });
  const stake = h('div', { class: 'stake', testid: 'spicy-at-stake', dataset: { value: v.spicy_at_stake ?? '' } },
    h('div', { class: 'stake-label' }, v.trick.length ? 'At stake' : 'Next trick'),
    spicyEl(v.spicy_at_stake ?? null, 'lg'),
    h('div', { class: 'stake-note' }, v.spicy_at_stake ? `worth ${v.spicy_at_stake}` : '—'));
  const main = h('div', { class: 'trick-main' });
  // Element.append would print a null as the text "null": skip the parts not shown.
  const add = (...kids) => main.append(...kids.filter(Boolean));
  const ended = v.round > 1 && v.trick.length === 0 && !v.last_trick ? events.find((e) => e?.type === 'trick_won') : null;

  if (v.trick.length > 0) {
    const fibs = v.trick.filter((p) => p.card.fibonacho).length;
    add(
      h('div', { class: 'trick-title' }, `Trick ${tricksDone + 1}`, v.lead_suit ? [' · ', h('span', { class: `suit-tag suit-${v.lead_suit}` }, `${cap(v.lead_suit)} led`)] : null),
      v.fibonachos_active
        ? h('div', { class: 'fib-alert', testid: 'fibonachos-active', role: 'status' }, spiral(), ' Fibonachos activated! The highest fibonacho wins.')
        : fibs === 1 ? h('div', { class: 'fib-hint' }, 'One fibonacho is down: a second one activates them.') : null,
      h('div', { class: 'trick-cards', dataset: { key: 'trick-cards' } },
        v.trick.map((p) => played(p, name, p.seat === v.trick_winning, v.fibonachos_active, 'trick-card', 'winning', `${v.round}-${tricksDone + 1}-${p.seat}`)),
        Array.from({ length: Math.max(0, v.players - v.trick.length) }, () => h('div', { class: 'nslot' }))));
  } else if (v.last_trick) {
    // Between tricks the table shows the trick just won, so nobody misses how it ended.
    const lt = v.last_trick;
    box.classList.add('showing-last');
    add(
      h('div', { class: 'trick-title', testid: 'trick-winner' }, `${name(lt.winner)} won trick ${tricksDone} and ${over ? 'took' : 'takes'} the spicy ${lt.spicy}`),
      lt.fibonachos_active ? h('div', { class: 'fib-alert past' }, spiral(), ' Fibonachos were active') : null,
      h('div', { class: 'trick-cards', dataset: { key: 'trick-cards' } }, lt.cards.map((p) => played(p, name, p.seat === lt.winner, lt.fibonachos_active, 'trick-card', 'won', `${v.round}-${tricksDone}-${p.seat}`))));
  } else if (ended) {
    // The round's last trick: the view of the new round no longer holds it, but the events
    // of this very message do, so the player still sees how the round ended.
    box.classList.add('showing-last');
    add(
      h('div', { class: 'trick-title', testid: 'trick-winner' }, `${name(ended.seat)} won the last trick of round ${v.round - 1} (spicy ${ended.spicy})`),
      ended.fibonachos_active ? h('div', { class: 'fib-alert past' }, spiral(), ' Fibonachos were active') : null,
      h('div', { class: 'trick-cards', dataset: { key: 'trick-cards' } }, (ended.cards || []).map((p) => played(p, name, p.seat === ended.seat, ended.fibonachos_active, 'trick-card', 'won'))));
  } else {
    add(h('div', { class: 'trick-title muted' },
      over ? 'The match is over.'
        : v.turn !== null && v.turn !== undefined ? `${name(v.turn)} leads the first trick of round ${v.round}` : 'No cards on the table'));
  }
  // After the match no trick is coming: no spicy card to show.
  if (!over) box.append(stake);
  box.append(main);
  return box;
}

function played(p, name, top, active, testid, tag, key = null) {
  return h('div', {
    class: ['nplayed', top ? 'top' : '', active && p.card.fibonacho ? 'fib-on' : ''].join(' '),
    testid,
    dataset: { seat: String(p.seat), winning: String(top), ...(key ? { key } : {}) },
  },
    nachoEl(p.card, { size: 'lg' }),
    h('div', { class: 'played-by' }, plateName(name(p.seat))),
    top ? h('div', { class: 'top-tag' }, tag) : null);
}

function lastTrick(v, name) {
  const lt = v.last_trick;
  // Also while the trick just won is on show: its cards travel to the winner meanwhile.
  if (!lt) return null;
  return h('aside', { class: 'nachos-last', testid: 'last-trick' },
    h('div', { class: 'muted small' }, 'Last trick'),
    h('div', { class: 'lt-who small' }, h('span', { class: 'lt-name' }, name(lt.winner)), ' took ', spicyEl(lt.spicy, 'xs')),
    h('div', { class: 'mini-cards' }, lt.cards.map((p) =>
      nachoEl(p.card, { size: 'xs', extraClass: p.seat === lt.winner ? 'won' : '' }))));
}

function scoringText(r) {
  if (r.scoring === 'no_tricks') return 'no tricks: 34';
  if (r.scoring === 'fibonacci_bonus') return `Fibonacci! ${r.spicy_total} → ${r.score}`;
  return 'as is';
}

function roundSummary(lr, name, onClose) {
  return h('section', { class: 'banner round-result', testid: 'round-summary', dataset: { round: String(lr.round) } },
    h('div', { class: 'banner-head' },
      h('h3', null, `Round ${lr.round} summary`),
      onClose ? h('button', { type: 'button', class: 'btn small', onclick: onClose, testid: 'round-summary-close' }, 'Close') : null),
    h('p', { class: 'muted small' }, 'Spicy totals that are Fibonacci numbers score the next Fibonacci number; no tricks at all scores 34.'),
    scrollBox(`Round ${lr.round} summary`,
      h('table', { class: 'grid' },
        h('thead', null, h('tr', null,
          h('th', null, 'Player'), h('th', { class: 'num hide-narrow' }, 'Tricks'), h('th', { class: 'num' }, 'Spicy'),
          h('th', null, 'Scoring'), h('th', { class: 'num' }, 'Round'), h('th', { class: 'num' }, 'Total'))),
        h('tbody', null, lr.results.map((r) =>
          h('tr', { dataset: { seat: String(r.seat), scoring: r.scoring }, testid: 'summary-row' },
            h('td', null, name(r.seat)),
            h('td', { class: 'num hide-narrow' }, String(r.tricks)),
            h('td', { class: 'num', testid: 'summary-spicy' }, String(r.spicy_total)),
            h('td', null, h('span', { class: `scoring scoring-${r.scoring}` }, scoringText(r))),
            h('td', { class: 'num', testid: 'summary-score' }, `+${r.score}`),
            h('td', { class: 'num' }, h('strong', null, String(lr.totals[r.seat]))))))),
    ));
}

function scoresTable(v, name) {
  const rounds = Array.from({ length: v.rounds }, (_, i) => i);
  const live = v.phase === 'playing';
  return h('section', { class: 'panel' },
    h('h3', null, 'Scores'),
    scrollBox('Scores',
      h('table', { class: 'grid scores', testid: 'scores' },
        h('thead', null, h('tr', null,
          h('th', null, 'Player'),
          live ? h('th', { class: 'num', title: 'spicy won this round so far' }, 'Spicy now') : null,
          rounds.map((r) => h('th', { class: 'num' }, `Round ${r + 1}`)),
          h('th', { class: 'num' }, 'Total'))),
        h('tbody', null, v.totals.map((t, s) =>
          h('tr', { class: [v.turn === s ? 'turn' : '', v.winners?.includes(s) ? 'winner' : ''].join(' '), dataset: { seat: String(s) } },
            h('td', null, name(s)),
            live ? h('td', { class: 'num' }, String(v.spicy_piles[s]?.total ?? 0)) : null,
            rounds.map((r) => h('td', { class: 'num' },
              v.round_scores[r] ? String(v.round_scores[r][s]) : h('span', { class: 'muted' }, '·'))),
            h('td', { class: 'num total', testid: `score-${s}` }, h('strong', null, String(t)))))))));
}
