// Tiny DOM helpers. Every piece of text goes in through textContent (player names are
// user input), so nothing built here can inject markup.
//
// Pages that re-render on every update (the table) build a fresh tree with `h` and
// `morph` it into the live one: elements that match keep their identity, so focus, an
// open select, a text being typed, a scroll position and CSS transitions survive. To make
// that safe, listeners go through one dispatcher per event type (`on`), whose handler the
// morph swaps for the new tree's: an element kept from an older render never runs an
// older closure (which could send a move for a card no longer there).

/**
 * h('div', {class: 'x', testid: 'y', onclick: fn}, child, 'text', [more]) builds an element.
 * Attributes: `class`, `testid` (data-testid), `dataset` (object), `on<event>` (listener),
 * `disabled`/`checked`/`value`/`selected` (properties), anything else setAttribute.
 * Children: nodes, strings/numbers (as text), arrays, null/false (skipped).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.dataset.testid = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') on(el, k.slice(2), v);
    else if (k === 'disabled' || k === 'checked' || k === 'value' || k === 'selected') {
      el[k] = v;
      (el.__props ??= {})[k] = v;
    }
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** svg('polyline', {points: '…'}, child…) builds an SVG element (attributes as given). */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/**
 * Listens to `type` on `el` through its dispatcher: a second call replaces the handler
 * (and `morph` moves the new tree's handlers onto the elements it keeps).
 */
export function on(el, type, fn) {
  el.__on ??= {};
  if (!(type in el.__on)) el.addEventListener(type, (e) => el.__on[type]?.(e));
  el.__on[type] = fn;
}

/** The identity of an element across renders: its test id, id and `data-key` together. */
const keyOf = (n) => (n.nodeType === 1 ? [n.dataset?.testid, n.id, n.dataset?.key].filter(Boolean).join('|') : '');

function same(o, n) {
  if (o.nodeType !== n.nodeType) return false;
  if (o.nodeType !== 1) return true;
  return o.tagName === n.tagName && keyOf(o) === keyOf(n);
}

/** Makes the kept element `o` look and behave like the new `n`, children included. */
function patch(o, n) {
  if (o.nodeType !== 1) {
    if (o.data !== n.data) o.data = n.data;
    return;
  }
  for (const a of [...o.attributes]) if (!n.hasAttribute(a.name)) o.removeAttribute(a.name);
  for (const a of n.attributes) {
    if (o.getAttribute(a.name) === a.value) continue;
    // The CSP refuses style attributes written as text; the CSSOM is allowed.
    if (a.name === 'style') o.style.cssText = n.style.cssText;
    else o.setAttribute(a.name, a.value);
  }
  for (const t of Object.keys(o.__on ?? {})) if (!(t in (n.__on ?? {}))) o.__on[t] = null;
  for (const [t, fn] of Object.entries(n.__on ?? {})) on(o, t, fn);
  for (const [k, v] of Object.entries(n.__props ?? {})) if (o[k] !== v) o[k] = v;
  o.__props = n.__props;
  morph(o, [...n.childNodes]);
}

/**
 * Replaces the children of `el` with `children` (as `mount` does), keeping every element
 * that matches the new one at its place (same tag and key): only what changed is touched.
 */
export function morph(el, ...children) {
  const next = [];
  const flat = (list) => {
    for (const c of list) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) flat(c);
      else next.push(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  };
  flat(children);
  let i = 0;
  for (const n of next) {
    const o = el.childNodes[i];
    if (o === n) {
      i += 1;
      continue;
    }
    if (o && same(o, n)) patch(o, n);
    else if (o && keyOf(n)) {
      // A keyed element further on: what stands before it went away.
      let m = o.nextSibling;
      while (m && !(m.nodeType === 1 && same(m, n))) m = m.nextSibling;
      if (m) {
        while (el.childNodes[i] !== m) el.childNodes[i].remove();
        patch(m, n);
      } else el.insertBefore(n, o);
    } else if (o) el.insertBefore(n, o);
    else el.appendChild(n);
    i += 1;
  }
  while (el.childNodes.length > i) el.lastChild.remove();
  return el;
}

/** Replaces every child of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let toastBox = null;

/** A short message in the corner; `kind` is 'error' or 'info'. */
export function toast(message, kind = 'error', ms = 4500) {
  toastBox ??= document.getElementById('toasts');
  if (!toastBox) return;
  const t = h('div', { class: `toast toast-${kind}`, role: kind === 'error' ? 'alert' : 'status', testid: 'toast' }, message);
  t.addEventListener('click', () => t.remove());
  toastBox.appendChild(t);
  // Keep at most a handful: a burst of refusals should not cover the table.
  while (toastBox.children.length > 4) toastBox.firstChild.remove();
  setTimeout(() => t.remove(), ms);
}

/** Whether the page is laid out for a phone: single column, the breakpoint of style.css
    (and of the games' stylesheets). */
const phoneQuery = '(max-width: 720px)';
export const phoneLayout = () => matchMedia(phoneQuery).matches;

/** Calls `fn` whenever the page crosses the phone breakpoint (a phone turned on its side,
    a window resized): what a script laid out by `phoneLayout()` is drawn again with.
    Returns the function that stops listening. */
export function onLayoutChange(fn) {
  const q = matchMedia(phoneQuery);
  q.addEventListener('change', fn);
  return () => q.removeEventListener('change', fn);
}

// ---- The deck's colours: a preference remembered in this browser ----------------------
// "classic" is the printed deck. "four" is the four-colour deck: Fib-Fibonacci's suits
// each get their own colour (♠ black, ♥ red, ♦ blue, ♣ green), and the colour-coded cards
// of the other games switch to a palette that stays distinct under every common kind of
// colour blindness (Okabe and Ito's). The page's root carries it as `data-deck`; the
// stylesheets do the rest. Cards keep their colour initials and suit glyphs either way.
const DECK_KEY = 'fib.deck';
export const deckPref = () => (localStorage.getItem(DECK_KEY) === 'four' ? 'four' : 'classic');
export function applyDeck() {
  document.documentElement.dataset.deck = deckPref();
}

/** A labelled select for the deck's colours (table page and account page). */
export function deckControl() {
  const sel = h('select', {
    id: 'deck-colours', testid: 'deck-colours',
    onchange: (e) => {
      localStorage.setItem(DECK_KEY, e.target.value);
      applyDeck();
    },
  },
  h('option', { value: 'classic', selected: deckPref() === 'classic' }, 'Classic'),
  h('option', { value: 'four', selected: deckPref() === 'four' }, 'Four-colour, colour-blind safe'));
  return h('div', { class: 'deck-pref', testid: 'deck-pref' }, h('label', { for: 'deck-colours' }, 'Card colours'), sel);
}

/**
 * A won trick travels to its winner: after the winning card's glow (CSS), the cards of the
 * trick area `box` (its `.showing-last` state, elements matching `sel`) fly to the
 * winner's seat element `to`, shrinking and fading; the game keeps a "last trick" box in
 * view. The flying cards are copies in a layer of their own (hidden from assistive
 * technology and from clicks), so the next trick may start at once without cutting the
 * flight short; the originals fade out of the trick area as their copies leave. Only a
 * trick seen being played flies (not one already won when the page opened), and once;
 * nothing moves under reduced motion. The games key the trick's elements by round, trick
 * and seat, so the morph keeps them: a later update neither replays the flight nor brings
 * the cards back. `window.fibFlights` counts flights (and tricks left still) for the tests.
 */
export function flyTrick(box, sel, to) {
  if (!box) return;
  const cards = [...box.querySelectorAll(sel)];
  if (!box.classList.contains('showing-last')) {
    for (const el of cards) el.__seen = true;
    return;
  }
  if (!to || cards.every((el) => el.__flown) || !cards.some((el) => el.__seen)) return;
  for (const el of cards) el.__flown = true;
  const counts = (window.fibFlights ??= { flown: 0, still: 0 });
  if (matchMedia('(prefers-reduced-motion: reduce)').matches) {
    counts.still += 1;
    return;
  }
  let layer = document.getElementById('flights');
  if (!layer) {
    layer = h('div', { id: 'flights', class: 'flights', 'aria-hidden': 'true' });
    document.body.appendChild(layer);
  }
  const t = to.getBoundingClientRect();
  const delay = 650;
  for (const el of cards) {
    const f = el.getBoundingClientRect();
    if (!f.width) continue;
    const copy = el.cloneNode(true);
    for (const x of [copy, ...copy.querySelectorAll('[data-testid], [id]')]) {
      x.removeAttribute('data-testid');
      x.removeAttribute('id');
    }
    copy.style.left = `${f.left}px`;
    copy.style.top = `${f.top}px`;
    copy.style.width = `${f.width}px`;
    layer.appendChild(copy);
    const dx = t.left + t.width / 2 - (f.left + f.width / 2);
    const dy = t.top + t.height / 2 - (f.top + f.height / 2);
    copy.animate(
      [{ transform: 'none', opacity: 1 }, { transform: `translate(${dx}px, ${dy}px) scale(.35)`, opacity: 0 }],
      { duration: 480, delay, easing: 'cubic-bezier(.5, 0, .75, .4)', fill: 'both' },
    ).finished.then(() => copy.remove(), () => copy.remove());
    el.animate([{ opacity: 1 }, { opacity: 0 }], { duration: 1, delay, fill: 'forwards' });
  }
  counts.flown += 1;
}

/** Whether two lists of seat numbers name the same seats (in any order). */
export function sameSeats(a, b) {
  return a.length === b.length && a.every((s) => b.includes(s));
}

/** A round's end in words, with each seat's points and total (a screen reader heard only
    "The round is over"). Trump's event has points and totals, Fibonachos' the totals. */
export function roundWords(e, who) {
  const seats = (e.totals || []).map((t, s) => (e.points ? `${who(s)} ${e.points[s]} (total ${t})` : `${who(s)} ${t}`));
  const round = e.round ? `Round ${e.round} is over.` : 'The round is over.';
  return seats.length ? `${round} ${e.points ? 'Points' : 'Totals'}: ${seats.join(', ')}.` : round;
}

/** The match's end in words: who won, and the final scores. */
export function matchWords(winners, scores, who) {
  const won = (winners || []).map(who);
  const head = won.length ? `The match is over: ${won.join(' and ')} ${won.length === 1 && won[0] !== 'You' ? 'wins' : 'win'}.` : 'The match is over.';
  return scores?.length ? `${head} Final scores: ${scores.map((sc, s) => `${who(s)} ${sc}`).join(', ')}.` : head;
}

/**
 * A seat plate's name: on a phone (style.css) a house bot's plate says "Bot 2" (its level
 * is in the players bar above) and the viewer's own plate "You", so a narrow plate does not
 * cut them to "Bot 2…" or "Walker s3…"; any other name wraps onto a second line. `full` is
 * the table's name for the seat ("Bot 2 (normal)", "Ada (you)"); without `mine`, a name
 * ending in " (you)" is the viewer's.
 */
export function plateName(full, mine = / \(you\)$/.test(full)) {
  const bot = /^(Bot \d+) \(.+\)$/.exec(full);
  const short = mine ? 'You' : bot ? bot[1] : null;
  if (!short || short === full) return h('span', { class: 'plate-name' }, full);
  return h('span', { class: 'plate-name has-short' },
    h('span', { class: 'name-long' }, full), h('span', { class: 'name-short' }, short));
}

/**
 * A table in a box of its own that scrolls sideways when the table is wider than the page
 * (a phone): the keyboard can reach it (it is focusable) and a screen reader names it.
 */
export function scrollBox(label, table) {
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': label }, table);
}
