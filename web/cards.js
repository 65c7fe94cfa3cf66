// Drawing of Fibonacci cards (colour, number, printed symbol) with plain DOM + CSS, shared
// by the game modules. A card is readable at a glance: big number in its colour, the
// symbol glyph in the middle, and a colour name for screen readers.

import { h } from './dom.js';

/** Glyphs of the five symbols, keyed by their wire names. */
export const SYMBOLS = {
  circled_plus: '⊕',
  circle: '○',
  square: '□',
  star: '★',
  waves: '≋',
};

export const SYMBOL_NAMES = {
  circled_plus: 'circled plus',
  circle: 'circle',
  square: 'square',
  star: 'star',
  waves: 'wavy lines',
};

export const COLOURS = ['red', 'yellow', 'green', 'blue', 'purple'];

/**
 * A mark per colour that does not need colour vision: the colour's initial, printed on
 * every card (red R, yellow Y, green G, blue B, purple P), so that colours are told apart
 * under any kind of colour blindness.
 */
export const colourMark = (colour) => (COLOURS.includes(colour) ? colour[0].toUpperCase() : '?');

export const symbolGlyph = (s) => SYMBOLS[s] ?? '?';

/** The symbols in the order of R-30: card (colour c, number n) bears SYMBOL_ORDER[(n − 1 + c) mod 5]. */
const SYMBOL_ORDER = ['circled_plus', 'circle', 'square', 'star', 'waves'];

/**
 * A card as an object `{colour, number, symbol}`, from its wire code (`"r7"`: the colour's
 * letter and the number, protocol.md §6.2; the symbol follows from them, R-30) or from the
 * object form of earlier versions (kept as it is, its symbol filled in when missing).
 * `null` for anything else.
 */
export function toCard(c) {
  if (typeof c === 'string') {
    const m = /^([rygbp])(10|[1-9])$/.exec(c);
    if (!m) return null;
    const ci = 'rygbp'.indexOf(m[1]);
    const number = Number(m[2]);
    return { colour: COLOURS[ci], number, symbol: SYMBOL_ORDER[(number - 1 + ci) % 5] };
  }
  if (c && typeof c === 'object' && COLOURS.includes(c.colour) && Number.isInteger(c.number)) {
    if (c.symbol) return c;
    return { ...c, symbol: SYMBOL_ORDER[(c.number - 1 + COLOURS.indexOf(c.colour)) % 5] };
  }
  return c && typeof c === 'object' ? c : null;
}

/** A card's wire code (`"r7"`), what a client sends. */
export const cardCode = (c) => {
  const k = toCard(c);
  return k ? `${k.colour[0]}${k.number}` : null;
};

/** Same card? (by colour and number; the symbol follows from them). Either form. */
export const sameCard = (a, b) => {
  const x = toCard(a);
  const y = toCard(b);
  return !!x && !!y && x.colour === y.colour && x.number === y.number;
};

export const cardLabel = (card) => {
  const c = toCard(card) ?? {};
  return `${c.colour} ${c.number}${c.symbol ? ` ${SYMBOL_NAMES[c.symbol] ?? c.symbol}` : ''}`;
};

/**
 * A face-up card element. opts: {size: 'sm'|'md'|'lg', playable, onClick, testid, extraClass,
 * explain}. Clickable cards are <button>s so they work with the keyboard too. An unplayable
 * clickable card is disabled, unless `explain`: then it stays pressable (marked
 * aria-disabled) so that the server's refusal can tell the player why.
 */
export function cardEl(wire, opts = {}) {
  const card = toCard(wire) ?? {};
  const colour = COLOURS.includes(card.colour) ? card.colour : 'unknown';
  const clickable = typeof opts.onClick === 'function';
  const cls = ['card', `card-${colour}`, `card-${opts.size || 'md'}`];
  if (opts.playable) cls.push('playable');
  if (clickable && !opts.playable) cls.push('unplayable');
  if (opts.extraClass) cls.push(opts.extraClass);
  const glyph = symbolGlyph(card.symbol);
  const el = h(
    clickable ? 'button' : 'div',
    {
      class: cls.join(' '),
      type: clickable ? 'button' : null,
      // A card that is not a button is a picture with a name (a plain div may not carry one).
      role: clickable ? null : 'img',
      testid: opts.testid,
      dataset: {
        colour: card.colour,
        number: String(card.number),
        symbol: card.symbol ?? '',
        ...(opts.playable !== undefined ? { playable: String(!!opts.playable) } : {}),
        // The same card keeps its element across updates (`morph`).
        ...(opts.key ? { key: opts.key } : {}),
      },
      // A picture is named by its label; a button by its text, which for a screen reader
      // is the hidden name below (the visible glyphs are hidden from it instead).
      'aria-label': clickable ? null : cardLabel(card),
      title: cardLabel(card),
      disabled: clickable && !opts.playable && !opts.explain,
      'aria-disabled': clickable && !opts.playable && opts.explain ? 'true' : null,
      onclick: clickable ? () => opts.onClick(card) : null,
    },
    h('span', { class: 'card-corner card-tl', 'aria-hidden': 'true' }, String(card.number), h('span', { class: 'card-corner-sym' }, glyph)),
    h('span', { class: 'card-num', 'aria-hidden': 'true' }, String(card.number)),
    h('span', { class: 'card-sym', 'aria-hidden': 'true' }, glyph),
    h('span', { class: 'card-corner card-br', 'aria-hidden': 'true' }, String(card.number)),
    h('span', { class: 'card-mark', 'aria-hidden': 'true', testid: 'colour-mark' }, colourMark(card.colour)),
    clickable ? h('span', { class: 'sr-only' }, cardLabel(card) + (opts.playable ? ', playable' : '')) : null,
  );
  return el;
}

/** A face-down card, for counts. */
export function cardBack(size = 'sm') {
  return h('div', { class: `card card-back card-${size}`, 'aria-hidden': 'true' });
}
