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
