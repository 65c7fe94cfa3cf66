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

/** Same card? (by colour and number; the symbol follows from them). */
export const sameCard = (a, b) => !!a && !!b && a.colour === b.colour && a.number === b.number;

export const cardLabel = (c) =>
  `${c.colour} ${c.number}${c.symbol ? ` ${SYMBOL_NAMES[c.symbol] ?? c.symbol}` : ''}`;

/**
 * A face-up card element. opts: {size: 'sm'|'md'|'lg', playable, onClick, testid, extraClass,
 * explain}. Clickable cards are <button>s so they work with the keyboard too. An unplayable
 * clickable card is disabled, unless `explain`: then it stays pressable (marked
 * aria-disabled) so that the server's refusal can tell the player why.
 */
export function cardEl(card, opts = {}) {
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
