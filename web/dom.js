// Tiny DOM helpers. Every piece of text goes in through textContent (player names are
// user input), so nothing built here can inject markup.

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
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'disabled' || k === 'checked' || k === 'value' || k === 'selected') el[k] = v;
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
