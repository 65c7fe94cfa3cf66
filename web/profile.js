// A player's profile (#/players/<id>[/<name>]): their rating in every game and pool, with
// its history drawn as a chart (an SVG with a text alternative and a table of the points),
// matches played, win rate, and a replay link per rated match. Open to anyone.

import { h, mount, svg } from './dom.js';
import { api } from './api.js';
import { recentMatches } from './account.js';
import { profileChallenge } from './challenge.js';

const fmt = (x) => Math.round(x).toString();
const when = (ms) => new Date(ms).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

/** The rating after each match as a line, with μ − 3σ dashed below it. */
function chart(points, label) {
  const W = 320;
  const H = 140;
  const pad = 28;
  const ys = points.flatMap((p) => [p.rating, p.conservative]);
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const span = hi - lo || 1;
  const x = (i) => pad + (points.length === 1 ? (W - 2 * pad) / 2 : (i * (W - 2 * pad)) / (points.length - 1));
  const y = (v) => H - pad + 10 - ((v - lo) * (H - 2 * pad)) / span;
  const line = (key) => points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ');
  const first = points[0];
  const last = points[points.length - 1];
  const desc = `${label}: from ${fmt(first.rating)} to ${fmt(last.rating)} over ${points.length} rated matches.`;
  const el = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': desc, class: 'rating-chart' },
    svg('title', null, desc),
    svg('text', { x: 2, y: y(hi) + 4, class: 'axis' }, fmt(hi)),
    svg('text', { x: 2, y: y(lo) + 4, class: 'axis' }, fmt(lo)),
    svg('polyline', { points: line('conservative'), class: 'conservative' }),
    svg('polyline', { points: line('rating'), class: 'rating' }),
    ...points.map((p, i) => svg('circle', { cx: x(i), cy: y(p.rating), r: 3, class: p.won ? 'won' : 'lost' })));
  return el;
}

export async function profilePage(app, id, name, { title, stale }) {
  mount(app, h('p', { class: 'muted' }, 'Loading the profile…'));
  const [player, ratings, matches, me] = await Promise.all([api.player(id), api.playerRatings(id), api.playerMatches(id),
    api.me().catch(() => null)]);
  const histories = await Promise.all(ratings.map((r) => api.ratingHistory(id, r.game, r.pool)));
  if (stale()) return;
  // The name the server has now (the link's name may be an older one).
  const who = player.name || name || 'Player';
  const played = ratings.reduce((s, r) => s + r.matches, 0);
  const won = ratings.reduce((s, r) => s + r.wins, 0);
  mount(app, h('section', { class: 'profile', testid: 'profile' },
    h('h1', { testid: 'profile-name' }, who),
    player.bot ? h('p', { testid: 'profile-bot' }, h('span', { class: 'pill pill-bot' }, 'BOT'), ' A bot account: a program plays as this player.') : null,
    // Someone signed in may challenge this player (docs/protocol.md §4.2), in the lobby now.
    me && me.id !== player.id
      ? profileChallenge({ games: () => api.games(), title, to: { id: player.id, name: who } }) : null,
    h('p', { testid: 'profile-summary' }, ratings.length
      ? `${played} rated ${played === 1 ? 'match' : 'matches'}, ${won} won (${Math.round((100 * won) / Math.max(1, played))} %).`
      : 'No rated matches yet: matches between people are rated; bots do not count.'),
    ratings.map((r, k) => {
      const points = histories[k];
      const label = `${title(r.game)}, ${r.pool === 'duel' ? 'duels' : '3–5 players'}`;
      return h('section', { class: 'panel', testid: 'profile-pool', dataset: { game: r.game, pool: r.pool } },
        h('h2', null, label),
        h('p', null, `Rating ${fmt(r.rating)} ± ${fmt(r.deviation)} · conservative ${fmt(r.conservative)} · `,
          `${r.matches} matches, ${r.wins} won${r.ranked ? '' : ' · not on the leaderboard yet'}`),
        points.length ? chart(points, label) : null,
        points.length ? h('details', null, h('summary', null, 'Every rated match'),
          h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'history' },
            h('thead', null, h('tr', null, h('th', null, 'Date'), h('th', { class: 'num' }, 'Rating'),
              h('th', null, 'Result'), h('th', null, ''))),
            h('tbody', null, points.map((p) => h('tr', null,
              h('td', null, when(p.at)), h('td', { class: 'num' }, fmt(p.rating)),
              h('td', null, p.won ? 'won' : 'lost'),
              h('td', null, h('a', { href: `#/replay/${p.table_id}`, testid: 'history-replay' }, 'replay')))))))) : null);
    }),
    recentMatches(matches, title)));
}
