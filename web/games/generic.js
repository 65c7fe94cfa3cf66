// Fallback renderer for a game that has no module of its own yet: it shows the scores, the
// raw view JSON, and each legal action as a button that sends it. Ugly but playable.

import { h, mount } from '../dom.js';

export function render(root, msg, ctx) {
  const t = msg.table;
  const actions = msg.legal || [];
  mount(
    root,
    h('section', { class: 'panel generic' },
      h('h3', null, 'Scores'),
      h('table', { class: 'grid', testid: 'scores' },
        h('thead', null, h('tr', null, h('th', null, 'Seat'), h('th', null, 'Player'), h('th', { class: 'num' }, 'Total'))),
        h('tbody', null, t.seats.map((_, i) =>
          h('tr', { class: [t.to_act.includes(i) ? 'turn' : '', i === ctx.mySeat ? 'me' : ''].join(' ') },
            h('td', null, String(i + 1)),
            h('td', null, ctx.seatName(i)),
            h('td', { class: 'num' }, String(t.scores[i] ?? 0)))))),
      h('h3', null, actions.length ? 'Your possible moves' : 'No move for you right now'),
      h('div', { class: 'legal-list', testid: 'legal-actions' },
        actions.map((a) =>
          h('button', {
            type: 'button',
            class: 'btn legal-action',
            testid: 'legal-action',
            disabled: ctx.busy,
            onclick: () => ctx.act(a),
          }, describe(a)))),
      h('details', { class: 'raw' },
        h('summary', null, 'What you see (raw view)'),
        h('pre', { testid: 'raw-view' }, JSON.stringify(msg.view, null, 2)))),
  );
}

// A compact one-line label: the action type, then its other fields as JSON.
function describe(a) {
  if (a && typeof a === 'object' && typeof a.type === 'string') {
    const { type, ...rest } = a;
    const more = Object.keys(rest).length ? ' ' + JSON.stringify(rest) : '';
    return type.replace(/_/g, ' ') + more;
  }
  return JSON.stringify(a);
}
