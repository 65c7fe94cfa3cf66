// Fibonacci 21 / 13 / 8 and Solitaire Fibonacci at the table (kind `rummy`).
//
// Shows the viewer's sorted hand, their sets with each set's running total toward the
// target and its open/closed state, the other players' tables (sets public, hands as a
// count), the stock and discard pile, and the scores with the round's breakdown.
//
// Interaction is select-then-target, so it works the same with a mouse and on a touch
// screen: tap a hand card (or a card in one of your open sets), then tap a set, the
// discard pile, or one of the action buttons the card's moves produce. Mouse users can
// also drag a card onto a set or the discard pile. Every move offered comes from the
// state's `legal` list (the opening builder is the one exception: it sends the player's
// own grouping, which the server checks like any move).
//
// Cards are drawn like the physical deck: the coloured area's height is number/21 of the
// card, the flower has as many petals as the number, base cards carry a rabbit and a red
// number, wilds are striped in every colour and the bonus card shows 2 + 3 + 3.

import { h, morph, mount, on, phoneLayout, sameSeats, scrollBox, toast } from '../dom.js';

export const title = 'Fibonacci 21 / 13 / 8 and Solitaire';

/**
 * A refusal of the server in the player's words (the server's message is for developers).
 * `view` is the state the move was tried in. Most moves here come from the `legal` list,
 * so refusals come from the opening builder, or from a move racing the table.
 */
export function explainError(err, view) {
  const T = view?.target ?? 'T';
  const need = view?.opening_base_sets;
  const words = {
    not_your_turn: 'It is not your turn yet.',
    card_not_in_hand: 'That card is no longer in your hand.',
    must_draw_first: 'Draw first: two cards from the stock, or the top of the discard pile.',
    already_drew: 'You have drawn this turn already: lay cards down or discard.',
    no_draw_after_all_sets_closed: 'Every one of your sets is closed, so you no longer draw: just discard.',
    stock_empty: 'The stock is empty.',
    discard_pile_empty: 'The discard pile is empty.',
    not_opened: 'Lay down your opening first: only then can you add to sets.',
    already_opened: 'You have opened already.',
    opening_incomplete: `Your opening is not complete: it needs card ${T} on its own${need ? ` and at least ${need} sets` : ' and the base sets'}, each started by a base card, the bonus card or a wild, laid down together.`,
    duplicate_card: 'The same card is in your opening twice.',
    empty_set: 'One of the sets of your opening has no card: fill it or leave it out.',
    bad_wild_number: 'A wild cannot count that number there.',
    not_a_starter: 'That card cannot start a set: a set starts with a base card, the bonus card or a wild.',
    base_card_cannot_be_added: 'A base card starts its own set; it cannot be added to another.',
    set_number_in_use: 'You already have a set of that number.',
    over_target: `That would take the set over ${T}.`,
    no_such_set: 'You have no such set on the table.',
    set_closed: 'That set is closed: nothing more goes on it.',
    set_not_complete: `That set does not add up to ${T} yet, so it cannot be closed.`,
    card_not_in_set: 'That card is not in that set.',
    starter_cannot_move: 'The card that started a set stays in it.',
    not_a_wild: 'Only a wild can change the number it counts.',
    no_change: 'The wild counts that number already.',
    not_exchangeable: 'That card cannot take the place of the wild.',
    must_keep_card: 'Keep a card to discard: that would empty your hand before every set is closed.',
    must_close_all_sets: 'Your last card can go only once every one of your sets is closed.',
    same_set: 'The card is already in that set.',
  };
  return words[err.code] ?? null;
}

/** The rules page for a table: a one-seat table is Solitaire, else the page of its target. */
export const rulesPage = (table) => {
  if (table.seats.length === 1) return 'solitaire';
  const target = Number(table.options?.target);
  return [21, 13, 8].includes(target) ? `fib${target}` : 'fib21';
};

/** The heading of a table: the game it is, by its target and seats. */
export const tableTitle = (table) => {
  const target = Number(table.options?.target) || 21;
  return table.seats.length === 1 ? `Solitaire Fibonacci ${target}` : `Fibonacci ${target}`;
};

/** Label of a seat count in the create-table form. */
export const seatLabel = (n) => (n === 1 ? 'Solitaire (1 player)' : `${n} players`);

const SVG = 'http://www.w3.org/2000/svg';

// One colour per Fibonacci number, as on the physical deck's coloured areas.
const COLOUR = { 2: '#d9483b', 3: '#ef8a2c', 5: '#e7c03a', 8: '#45a561', 13: '#3b7fc4', 21: '#8c5bb5' };
const NUMS = [2, 3, 5, 8, 13, 21];

function ensureCss() {
  if (document.querySelector('link[data-rummy-css]')) return;
  document.head.appendChild(h('link', { rel: 'stylesheet', href: '/games/rummy.css', 'data-rummy-css': '' }));
}

// ---------------------------------------------------------------------------------------
// Create-table options
// ---------------------------------------------------------------------------------------

/** Adds the rummy fields to the create form; returns a function yielding the options. */
export function createOptions(container) {
  ensureCss();
  const target = h('select', { testid: 'create-target' },
    h('option', { value: '21' }, 'Fibonacci 21 (longest)'),
    h('option', { value: '13' }, 'Fibonacci 13'),
    h('option', { value: '8' }, 'Fibonacci 8 (quickest)'));
  const lengths = [
    ['r1', '1 round', { kind: 'rounds', count: 1 }],
    ['r3', '3 rounds', { kind: 'rounds', count: 3 }],
    ['r5', '5 rounds', { kind: 'rounds', count: 5 }],
    ['p500', 'First to 500 points', { kind: 'first_to', points: 500 }],
    ['p1000', 'First to 1,000 points', { kind: 'first_to', points: 1000 }],
  ];
  const length = h('select', { testid: 'create-length' }, lengths.map(([v, l]) => h('option', { value: v }, l)));
  const nonRabbit = h('input', { type: 'checkbox', testid: 'create-nonrabbit' });
  const lengthLabel = h('label', null, 'Match length', length);
  container.append(
    h('label', null, 'Target', target),
    lengthLabel,
    h('label', { class: 'check', title: 'Once opened, your last two sets may start with a standard card; such a set scores 10 when closed (R-23).' },
      nonRabbit, 'Non-rabbit sets variation'));
  // A one-seat table is Solitaire: one game, so the match length does not apply.
  const seats = container.closest('form')?.querySelector('[data-testid="create-seats"]');
  const sync = () => { lengthLabel.style.display = seats?.value === '1' ? 'none' : ''; };
  seats?.addEventListener('change', sync);
  sync();
  return () => ({
    target: Number(target.value),
    match_length: lengths.find(([v]) => v === length.value)[2],
    non_rabbit: nonRabbit.checked,
  });
}

// ---------------------------------------------------------------------------------------
// Cards
// ---------------------------------------------------------------------------------------

function svg(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const k of kids) if (k) el.appendChild(k);
  return el;
}

function flower(cx, cy, n, r, colour) {
  const g = svg('g', { class: 'flower' });
  const petal = Math.max(1.4, Math.min(4.2, (2 * Math.PI * r * 0.55) / n));
  for (let i = 0; i < n; i++) {
    g.appendChild(svg('ellipse', {
      cx, cy: cy - r / 2, rx: petal, ry: r / 2,
      transform: `rotate(${(360 / n) * i} ${cx} ${cy})`,
      fill: '#fff', stroke: colour, 'stroke-width': 0.8,
    }));
  }
  g.appendChild(svg('circle', { cx, cy, r: r * 0.28, fill: '#f2c14e', stroke: '#9a6b12', 'stroke-width': 0.7 }));
  return g;
}

// A small sitting rabbit: body, head, two long ears.
function rabbit(x, y, s) {
  const c = '#4a3b32';
  return svg('g', { class: 'rabbit', transform: `translate(${x} ${y}) scale(${s})` },
    svg('ellipse', { cx: 5, cy: 9, rx: 4.2, ry: 3.4, fill: c }),
    svg('circle', { cx: 8.2, cy: 5.6, r: 2.3, fill: c }),
    svg('ellipse', { cx: 7.6, cy: 1.6, rx: 0.8, ry: 2.6, fill: c, transform: 'rotate(-12 7.6 1.6)' }),
    svg('ellipse', { cx: 9.4, cy: 1.8, rx: 0.8, ry: 2.6, fill: c, transform: 'rotate(14 9.4 1.8)' }),
    svg('circle', { cx: 1.1, cy: 9.6, r: 1.2, fill: '#fff', stroke: c, 'stroke-width': 0.5 }));
}

function text(x, y, s, size, fill, anchor = 'start', weight = 800) {
  const t = svg('text', { x, y, 'font-size': size, fill, 'text-anchor': anchor, 'font-weight': weight, 'font-family': 'system-ui, sans-serif' });
  t.textContent = s;
  return t;
}

export function cardName(c) {
  if (c.kind === 'wild') return 'wild';
  if (c.kind === 'bonus') return 'bonus card (base 2 + 3 + 3)';
  return `${c.kind} ${c.number}`;
}

// The set's progress bar. Its width goes through the CSSOM, not a style attribute, which
// the Content-Security-Policy forbids.
function barFill(pct) {
  const el = h('span');
  el.style.width = `${pct}%`;
  return el;
}

/** The card face as an SVG (viewBox 60×90). */
function face(c) {
  const W = 60, H = 90;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'rc-face', 'aria-hidden': 'true', focusable: 'false' });
  root.appendChild(svg('rect', { x: 0.5, y: 0.5, width: W - 1, height: H - 1, rx: 6, fill: '#fffdf7', stroke: '#9c9484', 'stroke-width': 1 }));
  if (c.kind === 'wild') {
    // Every colour in bands: a wild can stand for any number.
    const band = (H - 2) / NUMS.length;
    NUMS.forEach((n, i) => root.appendChild(svg('rect', { x: 1, y: 1 + i * band, width: W - 2, height: band + 0.3, fill: COLOUR[n], opacity: 0.85 })));
    root.appendChild(svg('rect', { x: 0.5, y: 0.5, width: W - 1, height: H - 1, rx: 6, fill: 'none', stroke: '#3d3d3d', 'stroke-width': 1.4 }));
    root.appendChild(flower(30, 44, 8, 20, '#444'));
    root.appendChild(text(30, 48, 'W', 11, '#3a2a00', 'middle'));
    root.appendChild(text(4, 12, '★', 10, '#fff'));
    return root;
  }
  const n = c.kind === 'bonus' ? 2 : c.number;
  const base = c.kind === 'base' || c.kind === 'bonus';
  // The coloured area grows from the bottom: number/21 of the card (a 21 is full).
  const fillH = ((c.kind === 'bonus' ? 8 : n) / 21) * (H - 2);
  if (c.kind === 'bonus') {
    // Base 2 at the bottom, then the two printed 3s.
    const u = (H - 2) / 21;
    root.appendChild(svg('rect', { x: 1, y: H - 1 - 2 * u, width: W - 2, height: 2 * u, fill: COLOUR[2] }));
    root.appendChild(svg('rect', { x: 1, y: H - 1 - 5 * u, width: W - 2, height: 3 * u - 0.4, fill: COLOUR[3] }));
    root.appendChild(svg('rect', { x: 1, y: H - 1 - 8 * u, width: W - 2, height: 3 * u - 0.4, fill: COLOUR[3] }));
  } else {
    root.appendChild(svg('rect', { x: 1, y: H - 1 - fillH, width: W - 2, height: fillH, fill: COLOUR[n] ?? '#999', rx: n === 21 ? 5 : 0 }));
  }
  root.appendChild(flower(30, 42, n, n >= 13 ? 22 : 18, COLOUR[n] ?? '#777'));
  const numFill = base ? '#c0271b' : '#2b2b2b';
  root.appendChild(text(4, 15, String(n), 13, numFill));
  if (c.kind === 'bonus') {
    root.appendChild(text(30, 78, '+3 +3', 10, '#fff', 'middle'));
    root.appendChild(text(56, 15, 'B', 9, '#7a5a00', 'end'));
  }
  if (base) root.appendChild(rabbit(40, 3, 1.35));
  return root;
}

/**
 * A card element. opts: {size: 'lg'|'md'|'sm', value (what it counts in a set),
 * selected, onClick, testid, draggable, dim, dataset}.
 */
function cardEl(c, opts = {}) {
  const clickable = typeof opts.onClick === 'function';
  const wildValue = c.kind === 'wild' && opts.value ? ` counting ${opts.value}` : '';
  const el = h(clickable ? 'button' : 'div', {
    class: ['rc', `rc-${opts.size || 'md'}`, `rc-${c.kind}`, opts.selected ? 'selected' : '', opts.dim ? 'dim' : '', opts.hot ? 'hot' : ''].join(' '),
    type: clickable ? 'button' : null,
    role: clickable ? null : 'img',
    testid: opts.testid,
    dataset: { cardId: String(c.id), kind: c.kind, number: String(c.number ?? ''), ...(opts.dataset || {}) },
    // A picture is named by its label; a button by its (hidden) text.
    'aria-label': clickable ? null : cardName(c) + wildValue,
    'aria-pressed': clickable ? String(!!opts.selected) : null,
    'aria-disabled': clickable && opts.disabled ? 'true' : null,
    title: cardName(c) + wildValue,
    draggable: opts.draggable ? 'true' : null,
    onclick: clickable ? (e) => { e.stopPropagation(); if (!opts.disabled) opts.onClick(c, e); } : null,
  }, face(c),
  c.kind === 'wild' && opts.value ? h('span', { class: 'rc-value', 'aria-hidden': 'true' }, `=${opts.value}`) : null,
  clickable ? h('span', { class: 'sr-only' }, cardName(c) + wildValue + (opts.hot ? ', can go on the table' : '') + (opts.selected ? ', selected' : '')) : null);
  if (opts.draggable) {
    on(el, 'dragstart', (e) => {
      e.dataTransfer.setData('text/plain', String(c.id));
      e.dataTransfer.effectAllowed = 'move';
      opts.onDragStart?.();
    });
  }
  return el;
}

function backEl(size = 'sm') {
  return h('div', { class: `rc rc-${size} rc-back`, 'aria-hidden': 'true' });
}

// ---------------------------------------------------------------------------------------
// Per-table memory (selection, builder, recent events): UI state only, never game state.
// ---------------------------------------------------------------------------------------

const memory = new Map();
function mem(tableId) {
  if (!memory.has(tableId)) memory.set(tableId, { sel: null, builder: null, log: [], seen: 0, dismissed: 0 });
  return memory.get(tableId);
}

const is = (type) => (a) => a && a.type === type;

function setName(key, target) {
  return key === target ? `card ${target}` : `${key}-set`;
}

/** The events of an update in words, for the page's screen-reader announcer (app.js):
    what each player drew, laid down and discarded. */
export function describe(events, seatName, me, view) {
  const name = (s) => (s === me ? 'You' : seatName(s));
  return events.map((e) => eventLine(e, name, view?.target)).filter(Boolean).join(' ');
}

// A readable line for one public event.
function eventLine(e, name, target) {
  const cn = (c) => (c ? cardName(c) : 'a card');
  switch (e.type) {
    case 'round_started': return name(e.first) === 'You' ? `Round ${e.round}: you start.` : `Round ${e.round}: ${name(e.first)} starts.`;
    case 'drew': return e.from_discard
      ? `${name(e.seat)} took the ${cn(e.from_discard)} from the discard pile and ${e.from_stock} from the stock.`
      : `${name(e.seat)} drew ${e.from_stock} from the stock.`;
    case 'opened': return `${name(e.seat)} opened with ${e.sets.length} sets.`;
    case 'set_started': return `${name(e.seat)} started the ${setName(e.set, target)}${e.non_rabbit ? ' (non-rabbit)' : ''}.`;
    case 'card_added': return `${name(e.seat)} added a ${cn(e.card.card)} to the ${setName(e.set, target)}.`;
    case 'set_closed': return `${name(e.seat)} closed the ${setName(e.set, target)}.`;
    case 'took_back': return `${name(e.seat)} took a ${cn(e.card)} back from the ${setName(e.set, target)}.`;
    case 'starter_replaced': return `${name(e.seat)} put a ${cn(e.card)} at the start of the ${setName(e.set, target)}.`;
    case 'wild_number_set': return `${name(e.seat)} made a wild in the ${setName(e.set, target)} count ${e.number}.`;
    case 'card_moved': return `${name(e.seat)} moved a card from the ${setName(e.from, target)} to the ${setName(e.to, target)}.`;
    case 'discarded': return `${name(e.seat)} discarded a ${cn(e.card)}.`;
    case 'stock_reshuffled': return `The discard pile was shuffled into a new stock (${e.stock_count} cards).`;
    case 'went_out': return `${name(e.seat)} went out!`;
    case 'round_ended': return e.result.blocked ? 'The round ended: the stock ran out.' : 'The round ended.';
    case 'match_ended': return 'The match is over.';
    default: return null;
  }
}

// ---------------------------------------------------------------------------------------
// Render
// ---------------------------------------------------------------------------------------

export function render(root, msg, ctx) {
  ensureCss();
  const v = msg.view;
  if (!v) {
    mount(root, h('p', { class: 'muted' }, 'The match has not started yet.'));
    return;
  }
  const m = mem(ctx.tableId);
  const rerender = () => render(root, msg, ctx);
  const me = ctx.mySeat;
  const T = v.target;
  const legal = msg.legal || [];
  const name = (s) => (s === me ? 'You' : ctx.seatName(s));
  const myTable = me !== null ? v.tables.find((t) => t.seat === me) : null;
  const hand = v.hand || [];
  const myTurn = me !== null && v.turn === me && v.phase === 'playing';
  const busy = ctx.busy;

  // Recent events, once per version.
  if (msg.version > m.seen) {
    m.seen = msg.version;
    for (const e of msg.events || []) {
      const line = eventLine(e, (s) => (s === me ? 'You' : ctx.seatName(s)), T);
      if (line) m.log.push(line);
    }
    m.log = m.log.slice(-6);
  }

  // Drop a selection whose card is gone (the state moved on).
  if (m.sel?.from === 'hand' && !hand.some((c) => c.id === m.sel.id)) m.sel = null;
  if (m.sel?.from === 'set') {
    const s = myTable?.sets.find((x) => x.key === m.sel.set);
    if (!s || s.closed || !s.cards.some((p) => p.card.id === m.sel.id)) m.sel = null;
  }
  const openLegal = legal.find(is('open'));
  if (m.builder && (!myTurn || myTable?.opened || v.stage !== 'may_act')) m.builder = null;
  if (m.builder) m.builder.groups = m.builder.groups.map((g) => g.filter((p) => hand.some((c) => c.id === p.card)));

  const act = (a) => {
    if (ctx.act(a)) {
      m.sel = null;
      return true;
    }
    return false;
  };

  // Legal moves by the selected card.
  const sel = m.sel;
  const selHand = sel?.from === 'hand' ? hand.find((c) => c.id === sel.id) : null;
  const forHand = (id) => legal.filter((a) => a.card === id && ['discard', 'start_set', 'add_to_set', 'exchange_wild', 'restore_base'].includes(a.type));
  const forSetCard = (set, id) => legal.filter((a) => a.card === id && ((a.type === 'move_card' && a.from === set) || ((a.type === 'take_back' || a.type === 'set_wild_number') && a.set === set)));
  // Read the selection when asked: a drag selects its card without a re-render.
  const movesOf = (x) => (x ? (x.from === 'hand' ? forHand(x.id) : forSetCard(x.set, x.id)) : []);
  const selMoves = movesOf(sel);
  const movesOnto = (key) => movesOf(m.sel).filter((a) => (a.type === 'add_to_set' && a.set === key) || (a.type === 'move_card' && a.to === key));
  const discardNow = () => (m.sel?.from === 'hand' ? legal.find((a) => a.type === 'discard' && a.card === m.sel.id) : null);
  const selectHand = (c, e) => {
    if (m.builder) return builderToggle(c);
    m.sel = m.sel?.from === 'hand' && m.sel.id === c.id ? null : { from: 'hand', id: c.id };
    rerender();
    // Picked with the keyboard (a click of no pointer): the focus goes to the first thing
    // to do with the card ("Discard", "Start a new set"…), which were many Tabs away.
    if (m.sel && e?.detail === 0) root.querySelector('[data-testid="action-bar"] button:not([disabled])')?.focus();
  };
  const selectSetCard = (key, c) => {
    m.sel = m.sel?.from === 'set' && m.sel.id === c.id ? null : { from: 'set', set: key, id: c.id };
    rerender();
  };
  const discardMove = selHand ? legal.find((a) => a.type === 'discard' && a.card === selHand.id) : null;

  // --- opening builder ---------------------------------------------------------------
  function builderToggle(c) {
    const b = m.builder;
    const used = b.groups.findIndex((g) => g.some((p) => p.card === c.id));
    if (used >= 0) b.groups[used] = b.groups[used].filter((p) => p.card !== c.id);
    else {
      if (!b.groups.length) b.groups.push([]);
      const g = b.groups[b.active] ?? b.groups[b.groups.length - 1];
      // A wild needs a number: the first card of a group is a starter (base number or T).
      g.push({ card: c.id, number: c.kind === 'wild' ? (g.length === 0 ? T : v.base_numbers[0]) : null });
    }
    rerender();
  }
  const startBuilder = () => {
    const groups = (openLegal?.sets ?? []).map((g) => g.map((p) => ({ card: p.card, number: p.number ?? null })));
    m.builder = { groups: groups.length ? groups : [[]], active: Math.max(0, groups.length - 1) };
    m.sel = null;
    rerender();
  };

  const parts = [];

  // --- match / round results ---------------------------------------------------------
  if (v.outcome) parts.push(matchResult(v, me, name, msg.table?.winners));
  const lr = v.last_round;
  if (lr && !v.outcome && m.dismissed !== lr.round) {
    parts.push(roundResult(v, lr, name, () => { m.dismissed = lr.round; rerender(); }));
  }

  // --- info bar ------------------------------------------------------------------------
  const ml = v.options.match_length;
  parts.push(h('section', { class: 'rm-info', testid: 'rummy-info' },
    h('span', { class: 'rm-title' }, v.solitaire ? `Solitaire Fibonacci ${T}` : `Fibonacci ${T}`),
    h('span', null, h('span', { class: 'muted' }, 'Round '), h('strong', { testid: 'round-no' }, String(v.round))),
    v.solitaire ? null : h('span', { class: 'muted' }, ml.kind === 'rounds' ? `${ml.count} round${ml.count > 1 ? 's' : ''}` : `first to ${ml.points}`),
    h('span', { class: 'muted' }, `${v.required_sets} sets to go out · opening: card ${T} + ${v.opening_base_sets} base set${v.opening_base_sets > 1 ? 's' : ''}`),
    v.options.non_rabbit ? h('span', { class: 'pill' }, 'non-rabbit sets') : null,
    v.dealer !== null && v.dealer !== undefined && !v.solitaire ? h('span', { class: 'muted' }, `Dealer: ${name(v.dealer)}`) : null));

  // --- other players -----------------------------------------------------------------
  // On a phone their laid sets come after the hand (below): a plate that grew with every
  // set laid moved the hand down the page between two of the player's turns.
  const phone = phoneLayout();
  const others = v.tables.filter((t) => t.seat !== me);
  if (others.length) {
    parts.push(h('section', { class: 'rm-others', testid: 'opponents' }, others.map((t) => opponent(t, v, name, !phone))));
  }

  // --- centre: stock, discard pile, what to do -------------------------------------
  const drawStock = legal.find(is('draw_stock'));
  const drawDiscard = legal.find(is('draw_discard'));
  const stock = h('div', { class: `rm-pile ${drawStock ? 'hot' : ''}`, testid: 'stock', dataset: { count: String(v.stock_count) } },
    h('div', { class: 'rm-pile-cards' }, v.stock_count ? backEl('md') : h('div', { class: 'rc rc-md rc-empty' })),
    h('div', { class: 'rm-pile-label' }, `Stock: ${v.stock_count}`, v.reshuffled ? h('span', { class: 'muted small' }, ' (reshuffled)') : null),
    drawStock ? h('button', { class: 'btn primary small', type: 'button', testid: 'act-draw-stock', disabled: busy, onclick: () => act(drawStock) }, 'Draw 2') : null);
  const discard = h('div', {
    class: `rm-pile rm-discard ${drawDiscard || discardMove ? 'hot' : ''}`,
    testid: 'discard-pile',
    dataset: { count: String(v.discard_count) },
    onclick: () => { if (discardMove && !busy) act(discardMove); },
  },
    h('div', { class: 'rm-pile-cards' }, v.discard_top ? cardEl(v.discard_top, { size: 'md', testid: 'discard-top' }) : h('div', { class: 'rc rc-md rc-empty' })),
    h('div', { class: 'rm-pile-label' }, `Discards: ${v.discard_count}`),
    drawDiscard ? h('button', { class: 'btn small', type: 'button', testid: 'act-draw-discard', disabled: busy, onclick: (e) => { e.stopPropagation(); act(drawDiscard); } }, 'Take it + 1') : null,
    discardMove ? h('button', { class: 'btn primary small', type: 'button', testid: 'act-discard', disabled: busy, onclick: (e) => { e.stopPropagation(); act(discardMove); } }, 'Discard here') : null);
  dropTarget(discard, () => !!discardNow(), () => discardNow() && act(discardNow()));
  const centre = h('section', { class: 'rm-centre' }, stock, discard,
    h('div', { class: 'rm-guide' },
      h('p', { class: 'rm-hint', testid: 'rummy-hint' }, hint(v, me, myTable, legal, openLegal, sel, name, busy)),
      // Always there (empty at first), so that its first line does not move the hand.
      h('ul', { class: 'rm-log', testid: 'event-log' }, m.log.map((l) => h('li', null, l)))));
  parts.push(centre);

  // --- my table ------------------------------------------------------------------------
  const ownFrom = parts.length; // my sets, the buttons for a picked card, my hand
  if (myTable) {
    const outOfTurn = !myTurn && legal.some((a) => a.type === 'move_card' || a.type === 'set_wild_number');
    const setBoxes = [...myTable.sets].sort((a, b) => a.key - b.key).map((s) => mySet(s));
    parts.push(h('section', { class: 'rm-mine', testid: 'my-table' },
      h('div', { class: 'rm-head' },
        h('h3', null, 'Your sets'),
        h('span', { class: 'muted small' }, myTable.opened
          ? `${myTable.closed_sets} of ${v.required_sets} closed`
          : 'not opened yet'),
        outOfTurn ? h('span', { class: 'pill', title: 'R-18' }, 'you may rearrange your open sets now') : null),
      myTable.sets.length ? h('div', { class: 'rm-sets' }, setBoxes) : h('p', { class: 'muted small' }, `Nothing on the table yet. Your opening must lay down card ${T} and ${v.opening_base_sets} base set${v.opening_base_sets > 1 ? 's' : ''} in one turn.`)));
  }

  // --- actions for the selection, opening, builder --------------------------------------
  if (myTable) {
    const bar = actionBar();
    if (bar) parts.push(bar);
  }

  // --- my hand -------------------------------------------------------------------------
  if (myTable) {
    const inBuilder = (id) => m.builder?.groups.some((g) => g.some((p) => p.card === id));
    parts.push(h('section', { class: `rm-hand-area ${myTurn ? 'my-turn' : ''}` },
      h('div', { class: 'rm-head' }, h('h3', null, `Your hand (${hand.length})`),
        hand.length ? h('span', { class: 'muted small' }, m.builder ? 'Tap cards to put them in the highlighted opening set.' : 'Tap a card to see what you can do with it.') : null),
      h('div', { class: 'rm-hand', testid: 'hand' },
        hand.length === 0 ? h('span', { class: 'muted' }, 'No cards.') : null,
        hand.map((c) => {
          const moves = forHand(c.id);
          return cardEl(c, {
            size: 'lg',
            testid: 'hand-card',
            selected: (sel?.from === 'hand' && sel.id === c.id) || inBuilder(c.id),
            // Highlight what can go on the table; every card may be discarded.
            hot: myTurn && moves.some((a) => a.type !== 'discard') && !m.builder,
            // A button even while a move is on its way (only inert then): a card that
            // turned into a <div> and back would be a new element twice per move.
            onClick: selectHand,
            disabled: busy,
            draggable: !busy && moves.length > 0 && !m.builder,
            onDragStart: () => { m.sel = { from: 'hand', id: c.id }; },
            // Keyed by the card (docs/web.md): a draw or a discard keeps the other cards'
            // elements, so only a new card flies in (it is inserted), and focus stays.
            dataset: { moves: String(moves.length), key: `card-${c.id}` },
          });
        }))));
  } else {
    parts.push(h('p', { class: 'muted spectating' }, 'You are watching this match.'));
  }
  // On a phone the hand comes right under the piles, then the buttons, then my sets: in
  // the first screen whatever the tables hold (in the page's order too, for screen
  // readers and the keyboard).
  if (myTable && phone) parts.push(...parts.splice(ownFrom).reverse());
  const laid = others.filter((t) => t.sets.length);
  if (phone && laid.length) {
    parts.push(h('section', { class: 'rm-others rm-others-sets', testid: 'opponents-sets' }, laid.map((t) =>
      h('div', { class: 'rm-opp' }, h('h3', { class: 'rm-opp-title' }, `Sets of ${name(t.seat)}`), oppSets(t, v)))));
  }

  parts.push(scores(v, name, me));
  morph(root, h('div', { class: `rummy ${myTurn ? 'my-turn' : ''}`, testid: 'rummy' }, parts));
  // The newest lines of the log in view (a phone shows three).
  const log = root.querySelector('.rm-log');
  if (log) log.scrollTop = log.scrollHeight;

  // ---------------------------------------------------------------------------------
  function mySet(s) {
    const onto = sel && !s.closed ? movesOnto(s.key) : [];
    const close = legal.find((a) => a.type === 'close_set' && a.set === s.key);
    const pct = Math.min(100, (s.total / T) * 100);
    const wildChoices = onto.length > 1 ? onto : [];
    const box = h('div', {
      class: ['rm-set', s.closed ? 'closed' : 'open', s.complete ? 'complete' : '', onto.length ? 'target' : ''].join(' '),
      testid: `my-set-${s.key}`,
      dataset: { key: String(s.key), total: String(s.total), closed: String(s.closed), complete: String(s.complete) },
      onclick: onto.length === 1 && !busy ? () => act(onto[0]) : null,
    },
      setHead(s, T),
      h('div', { class: 'rm-bar', 'aria-hidden': 'true' }, barFill(pct)),
      h('div', { class: 'rm-set-cards' }, s.cards.map((p, i) => {
        const movable = !s.closed && i > 0 && forSetCard(s.key, p.card.id).length > 0;
        return cardEl(p.card, {
          size: 'md',
          value: p.value,
          testid: 'set-card',
          selected: sel?.from === 'set' && sel.id === p.card.id,
          hot: movable,
          onClick: movable && !busy ? () => selectSetCard(s.key, p.card) : null,
          draggable: movable && !busy,
          onDragStart: () => { m.sel = { from: 'set', set: s.key, id: p.card.id }; },
          dataset: { value: String(p.value) },
        });
      })),
      onto.length === 1 ? h('div', { class: 'rm-drop-note' }, sel.from === 'hand' ? 'tap to add here' : 'tap to move here') : null,
      wildChoices.length ? h('div', { class: 'rm-choices' }, h('span', { class: 'small' }, sel.from === 'hand' ? 'add as' : 'move'),
        wildChoices.map((a) => h('button', {
          class: 'btn small', type: 'button', disabled: busy, testid: `set-${s.key}-as-${a.number ?? 'x'}`,
          onclick: (e) => { e.stopPropagation(); act(a); },
        }, a.number ? String(a.number) : 'here'))) : null,
      close ? h('button', { class: 'btn primary small rm-close', type: 'button', testid: `close-set-${s.key}`, disabled: busy, onclick: (e) => { e.stopPropagation(); act(close); } }, `Close (${T})`) : null);
    dropTarget(box, () => movesOnto(s.key).length > 0, () => {
      const ms = movesOnto(s.key);
      if (ms.length === 1) act(ms[0]);
      else rerender(); // a wild: its numbers are now offered in the box
    });
    return box;
  }

  function dropTarget(el, accepts, onDrop) {
    on(el, 'dragover', (e) => {
      if (accepts()) {
        e.preventDefault();
        el.classList.add('drag-over');
      }
    });
    on(el, 'dragleave', () => el.classList.remove('drag-over'));
    on(el, 'drop', (e) => {
      e.preventDefault();
      el.classList.remove('drag-over');
      if (!busy) onDrop();
    });
  }

  function actionBar() {
    const btns = [];
    if (m.builder) return builderPanel();
    if (openLegal && !sel) {
      btns.push(h('button', { class: 'btn primary', type: 'button', testid: 'act-open', disabled: busy, onclick: () => act(openLegal), title: 'The standard opening: card T and every base number you hold' },
        `Lay down opening (${openLegal.sets.length} sets)`));
      btns.push(h('button', { class: 'btn', type: 'button', testid: 'act-build-open', disabled: busy, onclick: startBuilder }, 'Build my own opening…'));
    } else if (myTurn && v.stage === 'may_act' && !myTable.opened && !sel) {
      btns.push(h('button', { class: 'btn', type: 'button', testid: 'act-build-open', disabled: busy, onclick: startBuilder }, 'Try an opening…'));
    }
    if (sel) {
      const c = sel.from === 'hand' ? selHand : myTable.sets.find((s) => s.key === sel.set)?.cards.find((p) => p.card.id === sel.id)?.card;
      if (!c) return null;
      for (const a of selMoves) btns.push(moveButton(a));
      return h('section', { class: 'rm-actions', testid: 'action-bar' },
        h('div', { class: 'rm-sel' }, cardEl(c, { size: 'sm' }),
          h('span', null, h('strong', null, cardName(c)), sel.from === 'set' ? ` in your ${setName(sel.set, T)}` : ' in your hand')),
        h('div', { class: 'rm-btns' }, btns.length ? btns : h('span', { class: 'muted' }, myTurn ? 'Nothing to do with this card right now.' : 'You can use this card on your turn.'),
          h('button', { class: 'btn small', type: 'button', testid: 'act-cancel', onclick: () => { m.sel = null; rerender(); } }, 'Cancel')));
    }
    if (!btns.length) return null;
    return h('section', { class: 'rm-actions', testid: 'action-bar' }, h('div', { class: 'rm-btns' }, btns));
  }

  function moveButton(a) {
    const sn = (k) => setName(k, T);
    let label, testid, primary = false;
    switch (a.type) {
      case 'discard': label = 'Discard'; testid = 'act-discard-sel'; break;
      case 'start_set': label = a.number ? `Start the ${sn(a.number)} (as ${a.number})` : 'Start a new set'; testid = `act-start${a.number ? `-${a.number}` : ''}`; primary = true; break;
      case 'add_to_set': label = `Add to ${sn(a.set)}${a.number ? ` as ${a.number}` : ''}`; testid = `act-add-${a.set}${a.number ? `-${a.number}` : ''}`; primary = true; break;
      case 'exchange_wild': label = `Swap for the wild starting the ${sn(a.set)}`; testid = `act-exchange-${a.set}`; break;
      case 'restore_base': label = `Put in place of the standard card in the ${sn(a.set)}`; testid = `act-restore-${a.set}`; break;
      case 'move_card': label = `Move to ${sn(a.to)}`; testid = `act-move-${a.to}`; primary = true; break;
      case 'take_back': label = 'Back to hand'; testid = 'act-take-back'; break;
      case 'set_wild_number': label = `Count as ${a.number}`; testid = `act-wild-${a.number}`; break;
      default: label = a.type; testid = `act-${a.type}`;
    }
    return h('button', { class: `btn small ${primary ? 'primary' : ''}`, type: 'button', testid, disabled: busy, onclick: () => act(a) }, label);
  }

  function builderPanel() {
    const b = m.builder;
    const card = (id) => hand.find((c) => c.id === id);
    const send = () => {
      const sets = b.groups.filter((g) => g.length).map((g) => g.map((p) => (p.number ? { card: p.card, number: p.number } : { card: p.card })));
      if (!sets.length) return toast('Put some cards in the opening sets first.');
      if (act({ type: 'open', sets })) m.builder = null;
    };
    return h('section', { class: 'rm-actions rm-builder', testid: 'open-builder' },
      h('div', { class: 'rm-head' }, h('h3', null, 'Your opening'),
        h('span', { class: 'muted small' }, `Card ${T} alone, plus at least ${v.opening_base_sets} sets each started by a base card, the bonus card or a wild. Cards after the first are added to that set. The server checks it when you lay it down.`)),
      h('div', { class: 'rm-sets' }, b.groups.map((g, gi) => h('div', {
        class: `rm-set open ${gi === b.active ? 'target' : ''}`,
        testid: `builder-group-${gi}`,
        onclick: () => { b.active = gi; rerender(); },
      },
        h('div', { class: 'rm-set-head' }, h('strong', null, `Set ${gi + 1}`), gi === b.active ? h('span', { class: 'small' }, 'tap hand cards to add') : null),
        h('div', { class: 'rm-set-cards' }, g.length === 0 ? h('span', { class: 'muted small' }, 'empty') : null,
          g.map((p, pi) => {
            const c = card(p.card);
            if (!c) return null;
            const choices = pi === 0 ? [...v.base_numbers, T] : v.base_numbers;
            return h('div', { class: 'rm-bcard' },
              cardEl(c, { size: 'md', value: p.number, onClick: () => builderToggle(c) }),
              c.kind === 'wild' ? h('select', {
                'aria-label': 'number for this wild', onclick: (e) => e.stopPropagation(),
                onchange: (e) => { p.number = Number(e.target.value); rerender(); },
              }, choices.map((n) => h('option', { value: String(n), selected: n === p.number }, `as ${n}`))) : null);
          }))))),
      h('div', { class: 'rm-btns' },
        h('button', { class: 'btn small', type: 'button', testid: 'builder-new-set', onclick: () => { b.groups.push([]); b.active = b.groups.length - 1; rerender(); } }, '+ New set'),
        h('button', { class: 'btn primary', type: 'button', testid: 'builder-lay-down', disabled: busy, onclick: send }, 'Lay down'),
        h('button', { class: 'btn small', type: 'button', testid: 'builder-cancel', onclick: () => { m.builder = null; rerender(); } }, 'Cancel')));
  }
}

function setHead(s, T) {
  return h('div', { class: 'rm-set-head' },
    h('strong', null, s.key === T ? `Card ${T}` : `${s.key}-set`),
    s.non_rabbit ? h('span', { class: 'pill', title: 'started with a standard card: scores 10 when closed' }, 'non-rabbit') : null,
    h('span', { class: 'rm-total', testid: 'set-total' }, `${s.total} / ${T}`),
    h('span', { class: `rm-state ${s.closed ? 'closed' : s.complete ? 'complete' : 'open'}` },
      s.closed ? 'closed ✓' : s.complete ? 'complete' : 'open'));
}

function opponent(t, v, name, withSets = true) {
  const turn = v.turn === t.seat && v.phase === 'playing';
  return h('div', { class: `rm-opp ${turn ? 'turn' : ''}`, testid: `opp-${t.seat}`, dataset: { seat: String(t.seat), handCount: String(t.hand_count) } },
    h('div', { class: 'rm-opp-head' },
      h('strong', { class: 'rm-opp-name' }, name(t.seat)),
      v.dealer === t.seat ? h('span', { class: 'chip', title: 'dealer' }, 'D') : null,
      h('span', { class: 'rm-count', title: 'cards in hand', testid: 'opp-hand-count' }, backEl('xs'), ` ${t.hand_count}`),
      h('span', { class: 'muted small' }, t.opened ? `${t.closed_sets}/${v.required_sets} closed` : 'not opened'),
      h('span', { class: 'rm-score' }, `${v.scores[t.seat] ?? 0} pts`),
      turn ? h('span', { class: 'turn-tag' }, v.stage === 'must_draw' ? 'drawing' : 'playing') : null),
    withSets ? oppSets(t, v) : null);
}

/** An opponent's laid sets, small. */
function oppSets(t, v) {
  const T = v.target;
  return t.sets.length ? h('div', { class: 'rm-opp-sets' }, [...t.sets].sort((a, b) => a.key - b.key).map((s) =>
    h('div', { class: `rm-set small ${s.closed ? 'closed' : 'open'} ${s.complete ? 'complete' : ''}`, dataset: { key: String(s.key), closed: String(s.closed) } },
      setHead(s, T),
      h('div', { class: 'rm-set-cards' }, s.cards.map((p) => cardEl(p.card, { size: 'sm', value: p.value })))))) : null;
}

function hint(v, me, myTable, legal, openLegal, sel, name, busy) {
  const T = v.target;
  if (busy) return 'Sending…';
  if (v.outcome) return 'The match is over.';
  if (v.phase !== 'playing') return 'The next round starts in a moment.';
  if (me === null) return `${name(v.turn)} ${v.turn === null ? '' : 'is on turn'}.`;
  if (v.turn !== me) {
    const ooo = legal.some((a) => a.type === 'move_card' || a.type === 'set_wild_number');
    return `Waiting for ${name(v.turn)}.${ooo ? ' Meanwhile you may move cards between your open sets or change a wild\'s number.' : ''}`;
  }
  if (v.stage === 'must_draw') return 'Your turn: draw two cards: two from the stock, or the top discard and one from the stock.';
  if (v.stage === 'must_discard') return 'All your sets are closed: discard a card (your last one takes you out).';
  if (!myTable.opened) {
    return openLegal
      ? `You can open: lay down card ${T} and your base cards in one go, or build the opening yourself. Then discard to end your turn.`
      : `You cannot open yet (you need card ${T} and ${v.opening_base_sets} base card${v.opening_base_sets > 1 ? 's' : ''}, the bonus card or wilds). Select a card and discard it to end your turn.`;
  }
  if (sel) return 'Tap a highlighted set, or pick a move below.';
  return 'Tap a card in your hand, then the set to add it to. Close complete sets. Discard to end your turn.';
}

// `tableWinners`: the table's, which leave out a seat that abandoned (§1.6).
function matchResult(v, me, name, tableWinners) {
  const o = v.outcome;
  if (v.solitaire) {
    const d = v.last_round?.solitaire_discards;
    const won = o.winners.length > 0;
    return h('section', { class: `banner final ${won ? 'won' : ''}`, testid: 'match-result' },
      h('h2', null, won ? 'Solitaire complete!' : 'The stock ran out: game lost'),
      h('p', null, won ? `Every set closed with ${d} card${d === 1 ? '' : 's'} in the discard pile (lower is better).` : 'All the required sets were not closed before the stock ran out.'));
  }
  const won = Array.isArray(tableWinners) ? tableWinners : o.winners;
  const iWon = me !== null && won.includes(me);
  const lr = v.last_round;
  return h('section', { class: `banner final ${iWon ? 'won' : ''}`, testid: 'match-result' },
    h('h2', null, iWon ? 'You won the match!' : `${won.map(name).join(' and ')} won the match`),
    sameSeats(won, o.winners) ? null : h('p', { class: 'small' }, 'A player who abandoned the match cannot win it: the win goes to those who stayed.'),
    h('p', null, 'Final scores: ', o.scores.map((sc, s) => ({ sc, s })).sort((a, b) => b.sc - a.sc).map(({ sc, s }) => `${name(s)} ${sc}`).join(' · ')),
    lr ? h('p', { class: 'small' }, `Last round (${lr.round}): `, lr.went_out !== null && lr.went_out !== undefined ? `${name(lr.went_out)} went out.` : 'blocked, nobody went out.') : null,
    lr ? breakdown(lr, name) : null);
}

function roundResult(v, lr, name, onClose) {
  if (v.solitaire) return null; // the match result says it all
  return h('section', { class: 'banner round-result', testid: 'round-result', dataset: { round: String(lr.round) } },
    h('div', { class: 'banner-head' },
      h('h3', null, `Round ${lr.round}: ${lr.went_out !== null && lr.went_out !== undefined ? `${name(lr.went_out)} went out` : 'blocked, nobody went out'}`),
      h('button', { type: 'button', class: 'btn small', onclick: onClose, testid: 'round-result-close' }, 'Close')),
    breakdown(lr, name));
}

function breakdown(lr, name) {
  const sign = (n) => (n > 0 ? `+${n}` : String(n));
  return scrollBox('Round breakdown', h('table', { class: 'grid', testid: 'round-breakdown' },
    h('thead', null, h('tr', null, h('th', null, 'Player'), h('th', { class: 'num' }, 'Going out'), h('th', { class: 'num' }, 'Closed sets'),
      h('th', { class: 'num' }, 'Open sets'), h('th', { class: 'num' }, 'Hand'), h('th', { class: 'num' }, 'Round'))),
    h('tbody', null, lr.seats.map((s) => h('tr', { class: s.went_out ? 'winner' : '' },
      h('td', null, name(s.seat)),
      h('td', { class: 'num' }, s.going_out_bonus ? sign(s.going_out_bonus) : '—'),
      h('td', { class: 'num' }, `${s.closed_sets} → ${sign(s.closed_points)}`),
      h('td', { class: 'num' }, s.open_penalty ? `−${s.open_penalty}` : '0'),
      h('td', { class: 'num' }, s.hand_penalty ? `−${s.hand_penalty}` : '0'),
      h('td', { class: 'num' }, h('strong', null, sign(s.total))))))));
}

function scores(v, name, me) {
  const lr = v.last_round;
  if (v.solitaire) {
    return h('section', { class: 'panel', testid: 'scores' },
      h('h3', null, 'Solitaire'),
      h('p', null, `Discard pile: ${v.discard_count} card${v.discard_count === 1 ? '' : 's'} so far (your score is the discard pile when every set is closed; lower is better). `,
        `Stock: ${v.stock_count}: if it runs out before every set is closed, the game is lost.`));
  }
  return h('section', { class: 'panel', testid: 'scores' },
    h('h3', null, 'Scores'),
    scrollBox('Scores', h('table', { class: 'grid scores' },
      h('thead', null, h('tr', null, h('th', null, 'Player'), h('th', { class: 'num' }, 'Closed'),
        lr ? h('th', { class: 'num' }, `Round ${lr.round}`) : null, h('th', { class: 'num' }, 'Match total'))),
      h('tbody', null, v.scores.map((sc, s) => h('tr', { class: [v.turn === s ? 'turn' : '', s === me ? 'me' : ''].join(' '), dataset: { seat: String(s) } },
        h('td', null, name(s)),
        h('td', { class: 'num' }, `${v.tables[s]?.closed_sets ?? 0}/${v.required_sets}`),
        lr ? h('td', { class: 'num' }, String(lr.seats.find((x) => x.seat === s)?.total ?? '')) : null,
        h('td', { class: 'num', testid: `score-${s}` }, h('strong', null, String(sc)))))))),
    lr ? h('details', { class: 'rm-breakdown' }, h('summary', null, `How round ${lr.round} was scored`), breakdown(lr, name)) : null,
    h('p', { class: 'muted small' }, 'Going out: 80 + 20 per closed set. Others: +20 per closed set (10 non-rabbit), minus the numbers in open sets, minus twice the numbers in hand (wild 50 / 100, bonus 8 / 16).'));
}
