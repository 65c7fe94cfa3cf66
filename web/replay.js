// The replay viewer (#/replay/<table_id>): a finished match step by step, forwards and
// back, from GET /api/tables/<id>/replay. The server sends each seat's view once and then
// one JSON Patch per seat per step; this page applies them all up front and keeps every
// step's documents, so stepping back is as cheap as stepping forwards. The match is over,
// so every hand is shown, and each round's seed with its commitment. Anyone with the link
// may open it, signed in or not. Its analysis (web/analysis.js) is asked for here too.

import { h, mount, onLayoutChange } from './dom.js';
import { api, dealUrl } from './api.js';
import { applyPatch } from './patch.js';
import { gameModule } from './games/registry.js';
import { cardLabel, toCard } from './cards.js';
import { analysisView } from './analysis.js';

/** Builds every step's per-seat documents: docs[i][seat]. */
function documents(replay) {
  const docs = [replay.views];
  for (let i = 1; i < replay.steps.length; i++) {
    const prev = docs[i - 1];
    docs.push(prev.map((doc, seat) => applyPatch(structuredClone(doc), replay.steps[i].patches[seat])));
  }
  return docs;
}

function seatName(replay, s) {
  const seat = replay.seats[s];
  if (seat?.kind === 'player') return seat.name;
  if (seat?.kind === 'bot') return `Bot ${s + 1} (${seat.level})`;
  return `Seat ${s + 1}`;
}

// A card as words, whatever the game: the game module's own name for its cards if it has
// one, else Trump's colour cards or Fibonachos' suits.
function cardText(mod, c) {
  try {
    const t = mod.cardName?.(c);
    if (typeof t === 'string' && t && !t.includes('undefined')) return t;
  } catch {
    // fall through to the generic names
  }
  if (typeof c === 'string' && toCard(c)) return cardLabel(c);
  if (c && c.colour) return cardLabel(c);
  if (c && c.suit && c.number !== undefined) return `${c.number} ${c.suit}`;
  return JSON.stringify(c);
}

const looksLikeCard = (v) => v && typeof v === 'object' && !Array.isArray(v)
  && ['colour', 'suit', 'rank', 'kind', 'number'].some((k) => k in v);

function actionText(mod, a) {
  if (!a) return '';
  // A Trump move is its card's code alone (`"r7"`, docs/protocol.md §6.3).
  if (typeof a === 'string') return toCard(a) ? cardText(mod, a) : a;
  const words = (v) => {
    if (looksLikeCard(v)) return cardText(mod, v);
    if (v && typeof v === 'object' && 'card' in v) return words(v.card);
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
  const parts = Object.entries(a).filter(([k]) => k !== 'type')
    .map(([k, v]) => {
      if (k === 'card') return looksLikeCard(v) || toCard(v) ? cardText(mod, v) : `card #${v}`;
      return `${k.replace(/_/g, ' ')} ${words(v)}`;
    });
  return [a.type?.replace(/_/g, ' '), ...parts].filter(Boolean).join(' ');
}

/** Renders the replay page for `id` into `app`; returns a cleanup function. */
export async function replayPage(app, id, { title, stale }) {
  mount(app, h('p', { class: 'muted' }, 'Loading the replay…'));
  const replay = await api.replay(id);
  const mod = await gameModule(replay.game);
  if (stale()) return () => {};
  const docs = documents(replay);
  const last = replay.steps.length - 1;
  let step = 0;
  let seat = 0;

  const heading = h('h1', { testid: 'replay-title' }, `Replay: ${title(replay.game)}`);
  const stepText = h('p', { class: 'replay-step', testid: 'replay-step', 'aria-live': 'polite' });
  const slider = h('input', {
    type: 'range', min: '0', max: String(last), value: '0', id: 'replay-slider', testid: 'replay-slider',
    'aria-label': 'Step',
  });
  const button = (label, testid, go) => h('button', { class: 'btn', type: 'button', testid, onclick: () => show(go()) }, label);
  const controls = h('div', { class: 'row replay-controls' },
    button('First', 'replay-first', () => 0),
    button('Back', 'replay-prev', () => step - 1),
    button('Next', 'replay-next', () => step + 1),
    button('Last', 'replay-last', () => last),
    slider);
  slider.addEventListener('input', () => show(Number(slider.value)));
  const viewpoint = h('select', { id: 'replay-seat', testid: 'replay-seat' },
    replay.seats.map((_, s) => h('option', { value: String(s) }, seatName(replay, s))));
  viewpoint.addEventListener('change', () => { seat = Number(viewpoint.value); show(step); });
  const gameRoot = h('div', { class: 'game-root' });
  const hands = h('section', { class: 'panel', testid: 'replay-hands' });
  const seeds = h('section', { class: 'panel', testid: 'replay-seeds' },
    h('h2', null, 'Seeds'),
    h('p', { class: 'small' }, 'Each round was dealt from its seed; its SHA-256 was shown when the round began. ',
      'To check every deal yourself, save this replay (',
      h('a', { href: `/api/tables/${encodeURIComponent(id)}/replay` }, 'JSON'),
      ') and run ', h('code', null, 'fibonacci-cards verify-match --replay replay.json'), ' (see docs/deals.md).'),
    h('ul', { class: 'seed-list' }, replay.rounds.map((r) => h('li', { testid: 'replay-seed' },
      `Round ${r.round}: `, h('code', { class: 'seed' }, r.seed), ' · SHA-256 ', h('code', { class: 'seed' }, r.seed_sha256), ' · ',
      h('a', { href: dealUrl(id, r.round) }, 'deal')))));
  // The analysis (web/analysis.js) sits above the move list; its arrival redraws the step.
  const analysis = analysisView(id, replay, {
    names: (x) => seatName(replay, x),
    words: (a) => actionText(mod, a),
    changed: (to) => {
      analysis.annotate(moves);
      show(to ?? step);
    },
  });
  const moves = h('ol', { class: 'replay-moves', testid: 'replay-moves', start: '0' },
    replay.steps.map((s, i) => h('li', null,
      h('a', { href: '#', dataset: { step: String(i) }, onclick: (e) => { e.preventDefault(); show(i); } },
        s.seat === null ? `Round ${s.round}: the deal` : `${seatName(replay, s.seat)}: ${actionText(mod, s.action)}`))));

  function show(i) {
    step = Math.max(0, Math.min(last, i));
    slider.value = String(step);
    const s = replay.steps[step];
    stepText.textContent = `Step ${step} of ${last} · round ${s.round} · ${
      s.seat === null ? 'the deal' : `${seatName(replay, s.seat)}: ${actionText(mod, s.action)}`}`;
    const views = docs[step];
    // The analysed best next move is offered as the only legal one, so the game's own
    // drawing marks it on the cards of the seat to move (when that is the seat shown).
    const best = analysis.next(step);
    const legal = best && best.seat === seat ? [best.action] : [];
    gameRoot.classList.toggle('analysis-best', legal.length > 0);
    mod.render(gameRoot, { type: 'state', version: step, view: views[seat], legal, events: [] }, {
      act: () => false, busy: false, seatName: (x) => seatName(replay, x), mySeat: seat, tableId: id,
    });
    const bestCard = best
      ? JSON.stringify((typeof best.action === 'string' ? best.action : best.action?.card) ?? null)
      : null;
    mount(hands, h('h2', null, 'Every hand'),
      views.map((v, x) => h('p', { testid: 'replay-hand', dataset: { seat: String(x) } },
        h('strong', null, `${seatName(replay, x)}: `),
        (v.hand || []).map((c, k) => {
          const marked = best && best.seat === x && bestCard === JSON.stringify(c);
          return [k ? ', ' : '', marked
            ? h('mark', { class: 'best', testid: 'best-card', title: 'the best move here' }, `\u2605 ${cardText(mod, c)}`)
            : cardText(mod, c)];
        }),
        (v.hand || []).length ? null : '(no cards)')));
    analysis.update(step);
    for (const li of moves.children) li.classList.toggle('current', Number(li.firstChild.dataset.step) === step);
  }

  const onKey = (e) => {
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
    const to = { ArrowLeft: step - 1, ArrowRight: step + 1, Home: 0, End: last }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    show(to);
  };
  document.addEventListener('keydown', onKey);

  mount(app, h('section', { class: 'replay', testid: 'replay' },
    heading,
    // Each name is isolated (<bdi>): a right-to-left name must not carry its score and
    // the next name along with it.
    h('p', { class: 'small replay-summary', testid: 'replay-summary' }, 'Final scores: ',
      replay.final_scores.flatMap((sc, x) => [x ? ' · ' : '', h('bdi', null, seatName(replay, x)), ` ${sc}`]),
      replay.winners.length ? [' · won by ', replay.winners.flatMap((x, i) => [i ? ' and ' : '', h('bdi', null, seatName(replay, x))])] : ''),
    h('div', { class: 'row' }, h('label', { for: 'replay-seat' }, 'Seen by '), viewpoint),
    controls, stepText, gameRoot, hands,
    analysis.el,
    h('section', { class: 'panel' }, h('h2', null, 'Moves'), moves),
    seeds));
  show(0);
  // The rummy games order their parts by the phone breakpoint: drawn again when it is crossed.
  const stopLayout = onLayoutChange(() => show(step));
  return () => {
    document.removeEventListener('keydown', onKey);
    analysis.stop();
    stopLayout();
  };
}
