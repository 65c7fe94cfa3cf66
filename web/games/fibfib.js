// Fib-Fibonacci at the table (rulebook 002, R-40..R-47). The table is drawn as the rulebook
// lays it out: columns run between the two players, each with its base card crosswise in
// the middle, one run growing toward the opponent (top) and one toward the viewer (bottom).
// The player picks a card in the hand; the places that card can go light up: run openings,
// the "new column" spot for a joker, table cards a 4 may replace, the spot beside a run for
// a 7/8 reaction. A 6 asks for the value it should count (or a restart). Every highlight
// and every offered value comes from the `legal` list of the latest state message; nothing
// here re-derives the rules, and what is sent is always one of those legal objects.

import { h, morph, mount } from '../dom.js';

export const title = 'Fib-Fibonacci';

/**
 * A refusal of the server in the player's words (the server's message is for developers).
 * Moves here come from the `legal` list, so a refusal means the table moved on meanwhile.
 */
export function explainError(err) {
  const words = {
    not_your_turn: 'It is not your turn yet.',
    card_not_in_hand: 'That card is no longer in your hand.',
    draw_pile_empty: 'The draw pile is empty.',
    not_a_joker: 'Only a joker opens a new column.',
    not_a_run_card: 'That card does not go in a run: runs take 2s, 3s, 5s, 7s, 8s and the 6s.',
    not_a_six: 'Only a 6 can restart a run.',
    not_a_four: 'Only a 4 can take the place of a card on the table.',
    no_such_column: 'That column is no longer on the table.',
    bad_side: 'That column has no such side.',
    value_required: 'Say what the 6 counts.',
    value_not_allowed: 'Only a 6 counts a value of your choice.',
    opening_lost: 'That opening is gone: its base was collected into the new draw pile.',
    does_not_fit: 'That card does not fit there: the run needs another value next.',
    bonus_too_high: 'The extra card beside a new joker must count 3 or less.',
    nothing_to_restart: 'A 6 restarts only a run that has at least one card.',
    not_on_table: 'That card is no longer face up on the table.',
    no_reaction_chance: 'There is no 7 or 8 to answer: you may answer only on the turn right after your opponent lays one.',
    wrong_reaction_card: 'Answer a 7 with the 8 of the same suit, or an 8 with the 7 of the same suit.',
    pass_not_allowed: 'You may pass only when you can neither draw nor play.',
  };
  return words[err.code] ?? null;
}

// The stylesheet is this module's own: loaded once, the first time the module runs.
if (!document.querySelector('link[data-fibfib-css]')) {
  document.head.appendChild(h('link', { rel: 'stylesheet', href: new URL('./fibfib.css', import.meta.url).href, 'data-fibfib-css': '' }));
}

const SUIT = { spades: '♠', hearts: '♥', diamonds: '♦', clubs: '♣' };
const RANK = { joker: 'Joker', two: '2', three: '3', four: '4', five: '5', six: '6', seven: '7', eight: '8' };
const FACE = { joker: 0, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8 };

const isJoker = (c) => c?.rank === 'joker';
const suitGlyph = (c) => SUIT[c?.suit] ?? '';
const colourOf = (c) => (isJoker(c) ? 'joker' : c.suit === 'hearts' || c.suit === 'diamonds' ? 'red' : 'black');
/** Short name for texts: "7♠", "Joker". */
export const cardName = (c) => (isJoker(c) ? 'Joker' : `${RANK[c.rank] ?? '?'}${suitGlyph(c)}`);
/** Long name for screen readers and tooltips; the id tells identical-looking cards apart. */
const cardLabel = (c) =>
  isJoker(c) ? `Joker (#${c.id})` : `${RANK[c.rank] ?? '?'} of ${c.suit ?? '?'} (#${c.id})`;

// What the player has picked so far, per table. It is only a pointer into the latest
// state's `legal` list: every render drops whatever that list no longer supports.
const ui = { table: null, version: null, card: null, bonus: null, spot: null };

function resetUi(tableId) {
  Object.assign(ui, { table: tableId, card: null, bonus: null, spot: null });
}

/**
 * A playing card. opts: {size: 'sm'|'md'|'lg', value (the value it counts, shown when it
 * differs from its face), cross (laid crosswise), onClick, state ('target'|'selected'|
 * 'playable'|'dim'|'fresh'|...), testid, title}.
 */
function cardEl(c, opts = {}) {
  const clickable = typeof opts.onClick === 'function';
  const cls = ['ff-card', `ff-${colourOf(c)}`, `ff-${opts.size || 'md'}`];
  if (c.suit) cls.push(`ff-s-${c.suit}`); // the four-colour deck colours by suit
  if (c.rank === 'four' || c.rank === 'six') cls.push('ff-wildcard');
  if (opts.cross) cls.push('ff-cross');
  for (const s of [].concat(opts.state || [])) if (s) cls.push(`is-${s}`);
  const rank = RANK[c.rank] ?? '?';
  const counts = opts.value !== undefined && opts.value !== null && opts.value !== FACE[c.rank];
  const face = isJoker(c)
    ? [h('span', { class: 'ff-corner ff-tl' }, 'J', h('br'), '★'),
      h('span', { class: 'ff-pip ff-joker-pip' }, '★'),
      h('span', { class: 'ff-joker-word' }, 'JOKER'),
      h('span', { class: 'ff-corner ff-br' }, 'J', h('br'), '★')]
    : [h('span', { class: 'ff-corner ff-tl' }, rank, h('br'), suitGlyph(c)),
      h('span', { class: 'ff-pip' }, suitGlyph(c)),
      c.rank === 'four' || c.rank === 'six'
        ? h('span', { class: 'ff-wild' }, c.rank === 'four' ? 'small wild' : 'big wild')
        : null,
      h('span', { class: 'ff-corner ff-br' }, rank, h('br'), suitGlyph(c))];
  const label = cardLabel(c) + (counts ? `, counts ${opts.value}` : '');
  const el = h(clickable ? 'button' : 'div', {
    class: cls.join(' '),
    type: clickable ? 'button' : null,
    role: clickable ? null : 'img',
    testid: opts.testid,
    dataset: { cardId: String(c.id), rank: c.rank, suit: c.suit ?? '', ...(opts.data || {}) },
    title: opts.title ?? label,
    // A picture is named by its label; a button by its (hidden) text.
    'aria-label': clickable ? null : opts.ariaLabel ?? label,
    onclick: clickable ? opts.onClick : null,
  },
  h('span', { class: 'ff-face', 'aria-hidden': 'true' }, face),
  counts ? h('span', { class: 'ff-counts', title: `counts ${opts.value}`, 'aria-hidden': 'true' }, `=${opts.value}`) : null,
  clickable ? h('span', { class: 'sr-only' }, opts.ariaLabel ?? label) : null);
  return el;
}

function cardBack(size = 'sm', extra = '') {
  return h('div', { class: `ff-card ff-back ff-${size} ${extra}`, 'aria-hidden': 'true' });
}

// ---------------------------------------------------------------------------------------

export function render(root, msg, ctx) {
  const v = msg.view;
  if (!v) {
    mount(root, h('p', { class: 'muted' }, 'The game has not started yet.'));
    return;
  }
  if (ui.table !== ctx.tableId) resetUi(ctx.tableId);
  const legal = Array.isArray(msg.legal) ? msg.legal : [];
  const me = ctx.mySeat;
  const bottom = me ?? 0; // the viewer sits at the bottom; a spectator sees seat 0 there
  const top = 1 - bottom;
  const name = (s) => (s === me ? 'You' : ctx.seatName(s));
  const myTurn = me !== null && v.turn === me && legal.length > 0 && !v.result;
  const busy = !!ctx.busy;
  const hand = v.hand ?? [];

  // --- What the legal list allows, by card --------------------------------------------
  const byCard = (id) => legal.filter((a) => a.card?.id === id);
  const jokerActs = (id) => legal.filter((a) => a.type === 'play_joker' && a.card.id === id);
  const bonusActs = (jid, bid) => jokerActs(jid).filter((a) => a.bonus && a.bonus.card.id === bid);
  const drawAct = legal.find((a) => a.type === 'draw');
  const passAct = legal.find((a) => a.type === 'pass');

  // Drop a selection the latest state no longer supports (the turn passed, the card left).
  if (!myTurn || (ui.card !== null && byCard(ui.card).length === 0)) {
    ui.card = null;
  }
  if (ui.card === null || ui.bonus === null || bonusActs(ui.card, ui.bonus).length === 0) ui.bonus = null;
  if (ui.card === null) ui.spot = null;
  if (ui.spot && spotActions(ui.spot).length === 0) ui.spot = null;

  const selCard = ui.card === null ? null : hand.find((c) => c.id === ui.card) ?? null;
  const selJoker = selCard && isJoker(selCard);

  // The actions that put the selected card (or the joker's bonus) at one place.
  function spotActions(spot) {
    if (ui.card === null) return [];
    if (spot.kind === 'run') {
      return byCard(ui.card).filter((a) =>
        (a.type === 'play_run_card' || a.type === 'play_restart') && a.column === spot.column && a.side === spot.side);
    }
    if (spot.kind === 'bonus') {
      return ui.bonus === null ? [] : bonusActs(ui.card, ui.bonus).filter((a) => a.bonus.side === spot.side);
    }
    return [];
  }
  const runTarget = (column, side) => !selJoker && ui.card !== null && spotActions({ kind: 'run', column, side }).length > 0;
  const swapTarget = (card) =>
    ui.card !== null && legal.find((a) => a.type === 'play_small_wild' && a.card.id === ui.card && a.replace.id === card.id);
  const reactAct = ui.card !== null ? legal.find((a) => a.type === 'play_reaction' && a.card.id === ui.card) : null;

  const send = (action) => {
    if (ctx.act(action)) {
      ui.card = null;
      ui.bonus = null;
      ui.spot = null;
    }
  };
  const rerender = () => render(root, msg, ctx);
  const choose = (spot) => {
    const acts = spotActions(spot);
    if (acts.length === 0) return;
    // A 6 always asks what it counts (or whether it restarts); anything else goes at once.
    const six = (spot.kind === 'bonus' ? hand.find((c) => c.id === ui.bonus) : selCard)?.rank === 'six';
    if (acts.length === 1 && !six) send(acts[0]);
    else {
      ui.spot = spot;
      rerender();
    }
  };

  // --- Cards in the latest move, so the eye finds what just changed ---------------------
  const fresh = new Set();
  for (const e of msg.events || []) {
    for (const k of ['card', 'replaced']) if (e?.[k]?.id !== undefined) fresh.add(e[k].id);
    if (e?.bonus?.card) fresh.add(e.bonus.card.id);
  }

  const parts = [];

  // --- Result ---------------------------------------------------------------------------
  if (v.result) parts.push(resultBanner(v.result, me, name, msg.table?.winners));

  // --- Reaction offer (R-45) --------------------------------------------------------------
  const reactions = legal.filter((a) => a.type === 'play_reaction');
  if (myTurn && reactions.length && v.reaction) {
    parts.push(h('section', { class: 'ff-offer', testid: 'reaction-offer' },
      h('span', null, `${name(1 - me)} just laid the ${cardName(v.reaction.laid)}. This turn only, you may set its partner beside that run: `),
      reactions.map((a) => h('button', {
        class: 'btn primary small', type: 'button', testid: 'reaction-button', disabled: busy,
        onclick: () => send(a),
      }, `Answer with ${cardName(a.card)}`))));
  }

  // --- Opponent, draw pile ----------------------------------------------------------------
  parts.push(seatBar(top, v, name, false));

  // --- The table ---------------------------------------------------------------------------
  const cols = v.columns.map((col, ci) => columnEl(col, ci));
  if (selJoker && myTurn) cols.push(newColumnEl());
  // It scrolls sideways on a narrow screen: focusable, so the keyboard can scroll it.
  const tableEl = h('section', { class: 'ff-table', testid: 'fib-table', tabindex: '0', 'aria-label': 'the table' },
    h('div', { class: 'ff-pile', testid: 'draw-pile', dataset: { count: String(v.draw_pile) } },
      h('div', { class: 'ff-stack' },
        v.draw_pile > 0 ? [cardBack('md', 'ff-s2'), cardBack('md', 'ff-s1'), cardBack('md')] : h('div', { class: 'ff-empty-pile' }, 'empty')),
      h('div', { class: 'ff-pile-count' }, h('strong', null, String(v.draw_pile)), ' in the draw pile'),
      v.refills ? h('div', { class: 'ff-pile-note' }, `refilled ${v.refills}×`) : null,
      drawAct && myTurn
        ? h('button', { class: 'btn primary', type: 'button', testid: 'draw-button', disabled: busy, onclick: () => send(drawAct) }, 'Draw')
        : null,
      passAct && myTurn
        ? h('button', { class: 'btn', type: 'button', testid: 'pass-button', disabled: busy, onclick: () => send(passAct) }, 'Pass')
        : null),
    h('div', { class: 'ff-cols', testid: 'columns' },
      cols.length ? cols : h('div', { class: 'ff-no-cols' }, 'No columns yet: a joker starts the first one.')));
  parts.push(tableEl);

  // --- The player's bar, the choice in progress, the hand --------------------------------
  parts.push(seatBar(bottom, v, name, true));
  if (v.hand) {
    parts.push(h('section', { class: `ff-hand-area ${myTurn ? 'my-turn' : ''}` },
      h('div', { class: 'ff-prompt', testid: 'prompt', role: 'status' }, prompt()),
      h('div', { class: 'ff-hand', testid: 'hand' },
        hand.length === 0 ? h('span', { class: 'muted' }, 'No cards left.') : null,
        hand.map(handCard))));
  } else {
    parts.push(h('p', { class: 'muted spectating' }, 'You are watching this game.'));
  }
  // The latest move stays in words until the next one (an update without a move, such as a
  // presence change, keeps it): a line that came and went moved the whole table and hand.
  // Its place is kept, empty, before the first move.
  const last = lastMove(msg.events || [], name);
  // Only the table on screen is kept: a page that visits many tables keeps one line.
  if (!lastLines.has(ctx.tableId)) lastLines.clear();
  if (last) lastLines.set(ctx.tableId, { text: last, version: msg.version });
  const kept = lastLines.get(ctx.tableId);
  const line = kept && kept.version <= msg.version ? kept.text : '';
  parts.splice(v.result ? 1 : 0, 0, h('p', { class: `ff-last ${line ? '' : 'empty'}`, testid: 'last-move' }, line));

  morph(root, h('div', { class: `ff ${myTurn ? 'my-turn' : ''}`, testid: 'fibfib', dataset: { turn: String(v.turn ?? '') } }, parts));

  // --- pieces ------------------------------------------------------------------------------

  function handCard(c) {
    const acts = byCard(c.id);
    // While a joker waits for its optional bonus, the cards that can be that bonus light up.
    const asBonus = selJoker && myTurn && bonusActs(ui.card, c.id).length > 0;
    const playable = myTurn && acts.length > 0;
    const selected = ui.card === c.id || ui.bonus === c.id;
    const state = selected ? 'selected' : asBonus ? 'bonus' : playable ? 'playable' : myTurn ? 'dim' : null;
    return cardEl(c, {
      size: 'lg',
      testid: 'hand-card',
      state,
      data: { playable: String(playable || asBonus), selected: String(selected) },
      onClick: (e) => {
        if (!myTurn || busy) return;
        if (asBonus) {
          ui.bonus = ui.bonus === c.id ? null : c.id;
          ui.spot = null;
        } else if (ui.card === c.id) {
          ui.card = null;
          ui.bonus = null;
          ui.spot = null;
        } else if (playable) {
          ui.card = c.id;
          ui.bonus = null;
          ui.spot = null;
        } else return;
        rerender();
        // A joker picked with the keyboard (a click of no pointer): the focus goes to "Play
        // the joker alone", which was many Tabs away.
        if (e?.detail === 0 && ui.card === c.id) root.querySelector('[data-testid="joker-alone"]')?.focus();
      },
    });
  }

  function prompt() {
    if (v.result) return 'The game is over.';
    if (me === null) return '';
    if (!myTurn) return v.turn !== null && v.turn !== undefined ? `Waiting for ${name(v.turn)}…` : '';
    if (busy) return 'Sending…';
    const cancel = h('button', {
      class: 'btn small', type: 'button', testid: 'cancel-selection',
      onclick: () => { resetUi(ctx.tableId); rerender(); },
    }, 'Cancel');
    if (ui.spot) return valuePicker(ui.spot, cancel);
    if (selJoker) {
      const alone = jokerActs(ui.card).find((a) => !a.bonus);
      const canBonus = jokerActs(ui.card).some((a) => a.bonus);
      return [
        h('span', null, ui.bonus !== null
          ? `Joker with ${cardName(hand.find((c) => c.id === ui.bonus))}: pick the side it starts, in the new column.`
          : canBonus ? 'A joker opens a new column. Play it alone, or first pick a bonus card (2, 3 or 6) to start one of its runs.'
            : 'A joker opens a new column.'),
        alone ? h('button', { class: 'btn primary small', type: 'button', testid: 'joker-alone', onclick: () => send(alone) }, 'Play the joker alone') : null,
        cancel];
    }
    if (selCard) {
      const a = byCard(selCard.id);
      const kinds = new Set(a.map((x) => x.type));
      const what = [];
      if (kinds.has('play_run_card') || kinds.has('play_restart')) what.push('a highlighted opening');
      if (kinds.has('play_small_wild')) what.push('a highlighted table card to swap it for');
      if (kinds.has('play_reaction')) what.push('the spot beside the run');
      return [h('span', null, `${cardName(selCard)}: choose ${what.join(' or ')}.`), cancel];
    }
    return [
      h('span', null, 'Your turn: pick a card to play',
        drawAct ? ', or draw.' : passAct ? ', or pass: you have no play.' : '.'),
    ];
  }

  function valuePicker(spot, cancel) {
    const acts = spotActions(spot);
    const six = spot.kind === 'bonus' ? hand.find((c) => c.id === ui.bonus) : selCard;
    const valueOf = (a) => (spot.kind === 'bonus' ? a.bonus.value : a.value);
    const values = acts.filter((a) => a.type !== 'play_restart' && valueOf(a) !== undefined && valueOf(a) !== null);
    const restart = acts.find((a) => a.type === 'play_restart');
    return h('div', { class: 'ff-picker', testid: 'value-picker' },
      h('span', null, `${cardName(six)} counts as:`),
      values.map((a) => h('button', {
        class: 'btn primary small ff-val', type: 'button', testid: 'value-option', dataset: { value: String(valueOf(a)) },
        onclick: () => send(a),
      }, String(valueOf(a)))),
      restart ? h('span', { class: 'muted small' }, 'or') : null,
      restart ? h('button', {
        class: 'btn small', type: 'button', testid: 'restart-option', onclick: () => send(restart),
        title: 'Lay the 6 crosswise on the end of this run: that side starts again from zero',
      }, 'Restart the run here') : null,
      cancel);
  }

  function columnEl(col, ci) {
    const swapOn = (card) => swapTarget(card);
    const tableCard = (card, opts) => {
      const swap = swapOn(card);
      return cardEl(card, {
        size: 'md',
        ...opts,
        testid: 'table-card',
        state: [opts.state, swap ? 'target' : null, fresh.has(card.id) ? 'fresh' : null],
        data: { swapTarget: String(!!swap) },
        onClick: swap && !busy ? () => send(swap) : null,
        title: swap ? `Swap your ${cardName(selCard)} for this card` : undefined,
      });
    };
    const sideEl = (s, pos) => {
      const side = col.sides[s];
      const stack = [];
      for (const l of side.ended || []) {
        stack.push(l.role === 'restart'
          ? tableCard(l.card, { cross: true, state: 'ended' })
          : tableCard(l.card, { value: l.value, state: 'ended' }));
      }
      if (side.restart) stack.push(tableCard(side.restart, { cross: true, state: 'restart' }));
      for (const p of side.run) stack.push(tableCard(p.card, { value: p.value }));
      stack.push(openingEl(ci, s, side));
      // The top side grows upward: its outermost card is drawn first (highest).
      if (pos === 'top') stack.reverse();
      const reactCards = col.reactions.filter((r) => r.side === s).map((r) => tableCard(r.card, { state: 'reaction' }));
      const chanceHere = v.reaction && v.reaction.column === ci && v.reaction.side === s;
      const reactSlot = reactAct && chanceHere
        ? h('button', {
          class: 'ff-react-slot is-target', type: 'button', testid: 'reaction-slot', disabled: busy,
          onclick: () => send(reactAct), title: `Set your ${cardName(selCard)} beside this run`,
        }, 'here')
        : null;
      return h('div', {
        class: `ff-side ff-${pos} ${side.closed ? 'is-closed' : ''}`,
        testid: 'run',
        dataset: { column: String(ci), side: String(s), closed: String(side.closed), length: String(side.run.length) },
      },
      h('div', { class: 'ff-stackcol' }, stack),
      reactCards.length || reactSlot ? h('div', { class: 'ff-reactions' }, reactCards, reactSlot) : null);
    };
    return h('div', { class: 'ff-col', testid: 'column', dataset: { column: String(ci) } },
      sideEl(top, 'top'),
      h('div', { class: 'ff-base', testid: 'base' },
        col.base ? tableCard(col.base, { cross: true, state: 'base' }) : h('div', { class: 'ff-nobase', title: 'the base went back into the draw pile' }, 'no base')),
      sideEl(bottom, 'bottom'));
  }

  function openingEl(ci, s, side) {
    const next = side.next || {};
    const target = myTurn && runTarget(ci, s);
    const picking = ui.spot && ui.spot.kind === 'run' && ui.spot.column === ci && ui.spot.side === s;
    const text = next.stage === 'first' ? '0–3' : next.stage === 'second' ? (next.after === 3 ? '4–5' : '3–5')
      : next.stage === 'sum' ? String(next.value) : next.stage === 'lost' ? 'lost' : '';
    const tip = next.stage === 'lost' ? 'this opening was lost when its base went back into the pile'
      : `next card must count ${text}` + (side.closed ? ' (closed: only a wild card fits; it goes back into the pile at the next refill)' : '');
    return h(target ? 'button' : 'div', {
      class: `ff-opening ${target ? 'is-target' : ''} ${picking ? 'is-picking' : ''} ${next.stage === 'lost' ? 'is-lost' : ''}`,
      type: target ? 'button' : null,
      testid: 'opening',
      dataset: { column: String(ci), side: String(s), stage: next.stage ?? '', target: String(!!target) },
      title: target ? `Play ${cardName(selCard)} here (${tip})` : tip,
      disabled: target && busy,
      onclick: target ? () => choose({ kind: 'run', column: ci, side: s }) : null,
    },
    side.closed ? h('span', { class: 'ff-closed', testid: 'closed-mark' }, 'closed') : null,
    h('span', { class: 'ff-need' }, text));
  }

  // The spot where a selected joker would open its column, with its two bonus openings.
  function newColumnEl() {
    const bonusSide = (s, pos) => {
      const target = ui.bonus !== null && spotActions({ kind: 'bonus', side: s }).length > 0;
      const picking = ui.spot && ui.spot.kind === 'bonus' && ui.spot.side === s;
      return h('div', { class: `ff-side ff-${pos}` },
        h('div', { class: 'ff-stackcol' },
          h(target ? 'button' : 'div', {
            class: `ff-opening ${target ? 'is-target' : ''} ${picking ? 'is-picking' : ''}`,
            type: target ? 'button' : null,
            testid: 'bonus-opening',
            dataset: { side: String(s), target: String(target) },
            title: target ? 'Start this run with the bonus card' : 'a new opening',
            onclick: target ? () => choose({ kind: 'bonus', side: s }) : null,
          }, h('span', { class: 'ff-need' }, '0–3'))));
    };
    return h('div', { class: 'ff-col ff-newcol', testid: 'new-column' },
      bonusSide(top, 'top'),
      h('div', { class: 'ff-base' }, cardEl(selCard, { size: 'md', cross: true, state: 'ghost' })),
      bonusSide(bottom, 'bottom'));
  }
}

function seatBar(s, v, name, mine) {
  const n = v.hand_counts[s] ?? 0;
  const turn = v.turn === s && !v.result;
  return h('section', {
    class: `ff-seat ${mine ? 'ff-me' : 'ff-opp'} ${turn ? 'turn' : ''}`,
    testid: mine ? 'my-seat' : 'opponent',
    dataset: { seat: String(s), count: String(n), turn: String(turn) },
  },
  h('div', { class: 'ff-seat-name' }, name(s),
    v.dealer === s ? h('span', { class: 'chip', title: 'dealer' }, 'D') : null,
    turn ? h('span', { class: 'turn-tag ff-turn' }, mine && name(s) === 'You' ? 'your turn' : 'to play') : null),
  h('div', { class: 'ff-seat-hand', title: `${n} card${n === 1 ? '' : 's'} in hand` },
    mine ? null : h('span', { class: 'ff-backs' }, Array.from({ length: Math.min(n, 12) }, () => cardBack('sm'))),
    h('span', { class: 'ff-count', testid: mine ? 'my-count' : 'opponent-count' }, `${n} card${n === 1 ? '' : 's'}`)));
}

// `tableWinners`: the table's, which leave out a seat that abandoned (§1.6): then the win
// goes to the one who stayed, whoever emptied their hand.
function resultBanner(game, me, name, tableWinners) {
  const forfeit = Array.isArray(tableWinners) && tableWinners.length === 1
    && game.winner !== null && game.winner !== undefined && tableWinners[0] !== game.winner;
  const r = forfeit ? { ...game, winner: tableWinners[0] } : game;
  const outcome = r.winner === null || r.winner === undefined ? 'draw' : me === null ? 'over' : r.winner === me ? 'win' : 'loss';
  const why = r.reason === 'two_passes' ? 'two passes in a row' : r.reason === 'turn_limit' ? 'the turn limit was reached' : '';
  const head = outcome === 'win' ? 'You won! Your hand is empty.'
    : outcome === 'loss' ? `${name(r.winner)} won: their hand is empty.`
      : outcome === 'draw' ? `A draw: ${why}.`
        : `${name(r.winner)} won.`;
  return h('section', { class: `banner final ff-result ${outcome === 'win' ? 'won' : ''}`, testid: 'result', dataset: { outcome } },
    h('h2', null, forfeit ? (outcome === 'win' ? 'You won: your opponent abandoned the match.' : `${name(r.winner)} won: the other player abandoned the match.`) : head));
}

/** The events of an update in words, for the page's screen-reader announcer (app.js). */
export function describe(events, seatName, me) {
  return lastMove(events, (s) => (s === me ? 'You' : seatName(s)));
}

// The latest move's line of the table on screen.
const lastLines = new Map();

// One line about the latest move, from the events of the latest state message.
function lastMove(events, name) {
  const out = [];
  for (const e of events) {
    switch (e?.type) {
      case 'round_started':
        out.push(`${name(e.dealer)} dealt; ${name(e.first)} ${name(e.first) === 'You' ? 'play' : 'plays'} first.`);
        break;
      case 'drew': out.push(`${name(e.seat)} drew a card.`); break;
      case 'joker_played':
        out.push(`${name(e.seat)} played a joker: new column ${e.column + 1}${e.bonus ? `, with ${cardName(e.bonus.card)}${e.bonus.value !== undefined ? ` counting ${e.bonus.value}` : ''} as a first card` : ''}.`);
        break;
      case 'run_card_played':
        out.push(`${name(e.seat)} played ${cardName(e.card)}${e.card.rank === 'six' ? ` counting ${e.value}` : ''} on column ${e.column + 1}.`);
        break;
      case 'restarted': out.push(`${name(e.seat)} restarted a run of column ${e.column + 1} with ${cardName(e.card)}.`); break;
      case 'small_wild_played': out.push(`${name(e.seat)} swapped ${cardName(e.card)} for ${cardName(e.replaced)}.`); break;
      case 'reaction_played': out.push(`${name(e.seat)} answered with ${cardName(e.card)} beside column ${e.column + 1}.`); break;
      case 'passed': out.push(`${name(e.seat)} passed.`); break;
      case 'refilled': out.push(`The draw pile was refilled with ${e.cards} cards from the table.`); break;
      default: break;
    }
  }
  return out.join(' ');
}
