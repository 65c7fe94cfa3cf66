// The analysis of a finished match, inside the replay viewer (#32, docs/analysis.md). It
// asks for the analysis (POST /api/tables/<id>/analysis), follows its progress while a
// worker has it (a progress bar, polled each second), and once done shows: per seat the
// accuracy and the biggest mistakes; per round a chart of every seat's expected final
// round score after each step (an SVG with a text alternative: its description and a
// table of the points); beside each move its cost and mistake flag; at the current step
// the move's evaluation against the best one and the hard bot's choice from the player's
// own view; and the best next move, which the replay marks on the cards.

import { h, mount, svg } from './dom.js';
import { api } from './api.js';

const FLAGS = {
  inaccuracy: { mark: '?!', word: 'inaccuracy' },
  mistake: { mark: '?', word: 'mistake' },
  blunder: { mark: '??', word: 'blunder' },
};
const num = (x) => (Math.round(x * 10) / 10).toFixed(1).replace(/\.0$/, '');
const signed = (x) => (x > 0 ? `+${num(x)}` : num(x));

/**
 * The analysis panel of replay `id`. `names(seat)` names a seat, `words(action)` says an
 * action, `changed()` is called when the analysis arrives (the replay redraws its step).
 * Returns `{ el, annotate(moves), update(step), next(step), stop() }`.
 */
export function analysisView(id, replay, { names, words, changed }) {
  let status;
  let problem = null;
  let timer = null;
  let stopped = false;
  let step = 0;
  const byStep = new Map();
  const el = h('section', { class: 'panel analysis', testid: 'analysis' });
  const chartBox = h('div', { class: 'analysis-chart', testid: 'analysis-chart' });
  const detail = h('div', { class: 'analysis-step', testid: 'analysis-step', 'aria-live': 'polite' });

  async function load() {
    try {
      const got = await api.analysis(id);
      status = got.state === 'not_requested' ? null : got;
      problem = null;
    } catch (e) {
      problem = e.message;
    }
    arrived();
  }

  async function ask() {
    try {
      status = await api.requestAnalysis(id);
      problem = null;
    } catch (e) {
      problem = e.code === 'unauthorized'
        ? 'Choose a name in the lobby first: analyses are counted per player.'
        : e.message;
    }
    arrived();
  }

  function arrived() {
    if (stopped) return;
    byStep.clear();
    if (status?.state === 'done') for (const s of status.analysis.steps) byStep.set(s.step, s);
    draw();
    if (status?.state === 'done') changed();
    clearTimeout(timer);
    if (status && (status.state === 'queued' || status.state === 'running')) timer = setTimeout(load, 1000);
  }

  function draw() {
    const parts = [h('h2', null, 'Analysis')];
    if (problem) parts.push(h('p', { class: 'error', testid: 'analysis-error', role: 'alert' }, problem));
    if (status === undefined) {
      parts.push(h('p', { class: 'muted' }, 'Looking for an analysis…'));
    } else if (status === null || status.state === 'failed') {
      parts.push(
        h('p', { class: 'small' }, status
          ? 'The analysis could not be made. You may ask again.'
          : 'Where was this match won or lost? An analysis evaluates every decision with all hands open, and what the hard bot would have done seeing only the player\u2019s own cards.'),
        h('button', { class: 'btn', type: 'button', testid: 'analysis-request', onclick: ask }, 'Analyse this match'));
    } else if (status.state === 'queued') {
      parts.push(h('p', { testid: 'analysis-progress-text' },
        status.ahead ? `Waiting for a worker: ${status.ahead} ahead of this one.` : 'Waiting for a worker: next in line.'),
      h('progress', { testid: 'analysis-progress', 'aria-label': 'Analysis progress' }));
    } else if (status.state === 'running') {
      const text = status.total ? `Analysing: ${status.done} of ${status.total} decisions.` : 'Analysing…';
      parts.push(h('p', { testid: 'analysis-progress-text' }, text),
        h('progress', { testid: 'analysis-progress', max: String(Math.max(1, status.total)), value: String(status.done), 'aria-label': text }));
    } else {
      parts.push(summary(status.analysis), chartBox, detail);
    }
    mount(el, ...parts);
    if (status?.state === 'done') update(step);
  }

  function summary(a) {
    const link = (s) => h('a', { href: '#', dataset: { step: String(s) }, onclick: (e) => { e.preventDefault(); changed(s); } }, `step ${s}`);
    return h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'analysis-seats' },
      h('thead', null, h('tr', null, h('th', null, 'Seat'), h('th', { class: 'num' }, 'Accuracy'),
        h('th', { class: 'num' }, 'Decisions'), h('th', { class: 'num' }, 'Points lost'), h('th', null, 'Biggest mistakes'))),
      h('tbody', null, a.seats.map((s) => h('tr', { testid: 'analysis-seat', dataset: { seat: String(s.seat) } },
        h('td', null, names(s.seat)),
        h('td', { class: 'num', testid: 'analysis-accuracy' }, `${num(s.accuracy)} %`),
        h('td', { class: 'num' }, String(s.decisions)),
        h('td', { class: 'num' }, num(s.total_cost)),
        h('td', null, s.mistakes.length ? s.mistakes.map((m, k) => [k ? ', ' : '', link(m)]) : 'none'))))));
  }

  /** The round that step `i` belongs to. */
  function roundOf(i) {
    const rounds = status.analysis.rounds;
    let r = rounds[0];
    for (const x of rounds) if (x.first_step <= i) r = x;
    return r;
  }

  function chart(r, at) {
    const W = 320;
    const H = 150;
    const pad = 26;
    const n = r.chart.length;
    const seats = r.chart[0]?.length ?? 0;
    const ys = r.chart.flat();
    const lo = Math.min(0, ...ys);
    const hi = Math.max(1, ...ys);
    const x = (j) => pad + (n === 1 ? (W - 2 * pad) / 2 : (j * (W - 2 * pad)) / (n - 1));
    const y = (v) => H - pad - ((v - lo) * (H - 2 * pad)) / (hi - lo);
    const desc = `Round ${r.round}, every seat's expected final score for the round after each step (${r.chart_method}): `
      + Array.from({ length: seats }, (_, s) => `${names(s)} from ${num(r.chart[0][s])} to ${num(r.chart[n - 1][s])}, scored ${r.final[s]}`).join('; ') + '.';
    const j = at - r.first_step;
    return [
      svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': desc, class: 'analysis-svg' },
        svg('title', null, desc),
        svg('text', { x: 2, y: y(hi) + 4, class: 'axis' }, num(hi)),
        svg('text', { x: 2, y: y(lo) + 4, class: 'axis' }, num(lo)),
        j >= 0 && j < n ? svg('line', { x1: x(j), x2: x(j), y1: pad / 2, y2: H - pad / 2, class: 'now' }) : null,
        Array.from({ length: seats }, (_, s) => svg('polyline', {
          class: `seat-${s}`,
          points: r.chart.map((p, k) => `${x(k).toFixed(1)},${y(p[s]).toFixed(1)}`).join(' '),
        }))),
      h('p', { class: 'legend small' }, Array.from({ length: seats }, (_, s) => h('span', { class: `key seat-${s}` }, names(s)))),
      h('details', null, h('summary', null, `Round ${r.round}: the chart as a table`),
        h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'analysis-chart-table' },
          h('thead', null, h('tr', null, h('th', null, 'Step'), Array.from({ length: seats }, (_, s) => h('th', { class: 'num' }, names(s))))),
          h('tbody', null, r.chart.map((p, k) => h('tr', null, h('td', null, String(r.first_step + k)), p.map((v) => h('td', { class: 'num' }, num(v))))))))),
    ];
  }

  function verdict(a) {
    const how = a.method === 'exact' ? 'exact' : `estimated, ± ${num(a.error)}`;
    const flag = FLAGS[a.flag];
    return [
      h('p', null, h('strong', null, `${names(a.seat)} played ${words(a.taken)}`),
        `: expects ${num(a.taken_value)} points this round (${how}). `,
        a.forced ? 'It was the only legal move.'
          : a.cost > 0 ? `Best was ${words(a.best)}, expecting ${num(a.best_value)}: ${num(a.cost)} points lost.`
            : 'That was the best move.',
        flag ? [' ', h('span', { class: `flag flag-${a.flag}`, testid: 'analysis-flag' }, `${flag.mark} ${flag.word}`)] : null),
      a.bot ? h('p', { class: 'small' }, `Seeing only ${names(a.seat)}\u2019s cards, the hard bot would play ${words(a.bot.action)} `,
        `and expects ${num(a.bot.expected)} (${a.bot.samples} deals sampled).`) : null,
    ];
  }

  function update(i) {
    step = i;
    if (status?.state !== 'done') return;
    mount(chartBox, ...chart(roundOf(i), i));
    const here = byStep.get(i);
    const ahead = byStep.get(i + 1);
    mount(detail,
      here ? verdict(here) : h('p', { class: 'small muted' }, 'A new deal: nothing was decided at this step.'),
      ahead && !ahead.forced ? h('p', { class: 'small', testid: 'analysis-next' },
        `Next, ${names(ahead.seat)}\u2019s best move: `, h('strong', { class: 'best' }, `\u2605 ${words(ahead.best)}`),
        ` (${signed(ahead.best_value)} expected).`) : null);
  }

  /** The moves list gets each decision's cost and flag. */
  function annotate(moves) {
    for (const li of moves.children) {
      li.querySelector('.move-eval')?.remove();
      const a = byStep.get(Number(li.firstChild.dataset.step));
      if (!a || a.forced) continue;
      const flag = FLAGS[a.flag];
      li.append(h('span', {
        class: `move-eval ${a.flag ? `flag flag-${a.flag}` : ''}`,
        testid: a.flag ? 'move-flag' : 'move-eval',
        title: a.cost > 0 ? `${num(a.cost)} points lost` : 'best move',
      }, flag ? ` ${flag.mark} −${num(a.cost)}` : a.cost > 0 ? ` −${num(a.cost)}` : ' \u2713'));
    }
  }

  /** The best move of the decision that follows step `i`, if there is one to choose. */
  function next(i) {
    const a = byStep.get(i + 1);
    return a && !a.forced ? { seat: a.seat, action: a.best } : null;
  }

  draw();
  load();
  return {
    el,
    annotate,
    update,
    next,
    done: () => status?.state === 'done',
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
