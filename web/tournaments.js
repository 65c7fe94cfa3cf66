// Tournaments (docs/tournaments.md, docs/protocol.md §2.27 and §4.3): the list with a
// create form (#/tournaments), and a page per tournament (#/tournament/<id>[/<invite>])
// with its standings, its rounds (each game's table and replay) and the podium at the
// end, live over the lobby socket. A player who joined is followed from any page: when
// the tournament seats them (`tournament_game`), the page goes to the table, unless they
// are at a table of another match.

import { h, mount, toast } from './dom.js';
import { api } from './api.js';

const FOLLOW = 'fib.tournaments';
const following = () => JSON.parse(localStorage.getItem(FOLLOW) || '[]');
const setFollowing = (ids) => localStorage.setItem(FOLLOW, JSON.stringify(ids.slice(-8)));

// ---- the watcher: one lobby socket for the tournaments this browser plays ----

let watcher = null;
/** Tables of the followed tournaments (a finished game there may be left for the next). */
const ownTables = new Set();

function follow(sock, id) {
  sock?.send({ type: 'tournament_follow', id, invite: localStorage.getItem(`fib.tinvite.${id}`) || null });
}

/** Tables already gone to (or offered): each only once. */
const handled = new Set();
/** This browser's player, whose games the watcher opens. */
let meId = null;

/** Goes to the player's tournament game, unless they are at a table of another match. */
function goTo(table) {
  if (handled.has(table)) return;
  handled.add(table);
  const at = location.hash.match(/^#\/table\/([^/]+)/)?.[1];
  if (at === table) return;
  if (!at || ownTables.has(at)) location.hash = `#/table/${table}`;
  else toast('Your next tournament game is ready.', 'info');
}

/** Starts (once) the socket that follows the tournaments this browser joined. */
export async function resume(me) {
  if (me) meId = me;
  if (watcher || !following().length) return;
  const { LiveSocket } = await import('./socket.js');
  if (watcher) return;
  // The tournaments whose first message since the socket (re)opened has not come yet.
  const catchUp = new Set();
  watcher = new LiveSocket('/ws/lobby', {
    onOpen: () => following().forEach((id) => { catchUp.add(id); follow(watcher, id); }),
    onMessage: (m) => {
      if (m.type === 'tournament') {
        for (const g of m.tournament.games) ownTables.add(g.table_id);
        if (m.tournament.status === 'finished' || m.tournament.status === 'cancelled') setFollowing(following().filter((x) => x !== m.tournament.id));
        // A game seated while this socket was away (`tournament_game` is not kept) shows in
        // the first message after it opened. Later ones are left to `tournament_game`: a
        // new round's standings come before its tables exist, and going there then found
        // no table (CI saw the page stuck on a 404).
        const first = catchUp.delete(m.tournament.id);
        const mine = first && m.tournament.games.find((g) => g.state === 'playing' && g.players.includes(meId));
        if (mine) goTo(mine.table_id);
      } else if (m.type === 'tournament_game') {
        ownTables.add(m.table);
        goTo(m.table);
      }
    },
  });
}

function watch(id, me) {
  if (me) meId = me;
  if (!following().includes(id)) setFollowing([...following(), id]);
  if (watcher) follow(watcher, id);
  else resume(me);
}

// ---- pages ----

const kindText = (k) => (k.type === 'swiss' ? `Swiss, ${k.rounds} rounds` : `Arena, ${Math.round(k.duration_s / 60)} min`);
const when = (ms) => (ms ? new Date(ms).toLocaleString() : '');
const over = (t) => t.status === 'finished' || t.status === 'cancelled';
const whyCancelled = {
  creator: 'cancelled by its creator',
  too_few_players: 'cancelled: too few players at its start time',
  expired: 'cancelled: too few players joined within a week',
  unscheduled: 'cancelled: taken off the schedule',
};

/** The mark of a tournament the server's operator scheduled (`created_by` is null). */
const officialMark = (t) => (t.created_by === null
  ? [' ', h('span', { class: 'pill pill-official', testid: 't-official', title: 'Scheduled by this server, not by a player' }, 'official')]
  : null);

/** `#/tournaments`: the list and the create form. */
export async function tournamentsPage(app, ctx) {
  const [list, games] = await Promise.all([api.tournaments(), api.games()]);
  if (ctx.stale()) return;
  const rows = list.tournaments.map((t) => h('tr', { testid: 'tournament-row' },
    // The operator's scheduled events are marked: a player may name theirs alike.
    h('td', null, h('a', { href: `#/tournament/${t.id}`, testid: 'tournament-link' }, t.name), officialMark(t)),
    h('td', null, ctx.title(t.game)),
    h('td', null, kindText(t.kind)),
    h('td', null, t.status),
    h('td', null, String(t.players)),
    h('td', null, t.starts_at ? when(t.starts_at) : `at ${t.start_when} players`)));
  const err = h('p', { class: 'form-error', role: 'alert', testid: 'tournament-error' });
  const field = (label, input) => h('label', null, label, ' ', input);
  const game = h('select', { name: 'game', testid: 't-game' }, ...games.map((g) => h('option', { value: g.kind }, g.title)));
  const kind = h('select', { name: 'kind', testid: 't-kind' }, h('option', { value: 'swiss' }, 'Swiss'), h('option', { value: 'arena' }, 'Arena'));
  const rounds = h('input', { type: 'number', min: '1', max: '30', value: '5', testid: 't-rounds' });
  const minutes = h('input', { type: 'number', min: '1', max: '1440', value: '30', testid: 't-minutes' });
  const size = h('input', { type: 'number', min: '1', max: '5', value: '2', testid: 't-size' });
  const startWhen = h('input', { type: 'number', min: '2', max: '512', value: '4', testid: 't-start-when' });
  const name = h('input', { type: 'text', maxlength: '120', placeholder: 'optional', testid: 't-name' });
  const pace = h('select', { testid: 't-pace' }, h('option', { value: 'live' }, 'Live (30 s a move)'), h('option', { value: 'untimed' }, 'Untimed'), h('option', { value: 'correspondence' }, 'Correspondence (a day a move)'));
  const rated = h('input', { type: 'checkbox', checked: true, testid: 't-rated' });
  const priv = h('input', { type: 'checkbox', testid: 't-private' });
  const bots = h('input', { type: 'checkbox', testid: 't-bots' });
  const form = h('form', { class: 'panel t-form', testid: 'tournament-form' },
    h('h2', null, 'Create a tournament'),
    field('Name', name), field('Game', game), field('Kind', kind), field('Rounds', rounds), field('Minutes (arena)', minutes),
    field('Players per table', size), field('Starts when this many joined', startWhen), field('Pace', pace),
    field('Rated', rated), field('Private (invite link)', priv), field('Bot accounts may join', bots),
    h('button', { class: 'btn primary', type: 'submit', testid: 't-create' }, 'Create'), err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    const paces = { live: { kind: 'live', move_s: 30, bank_s: 300 }, untimed: { kind: 'untimed' }, correspondence: { kind: 'correspondence', move_s: 86400 } };
    try {
      const t = await api.createTournament({
        name: name.value.trim() || null,
        game: game.value,
        kind: kind.value === 'swiss' ? { type: 'swiss', rounds: Number(rounds.value) } : { type: 'arena', duration_s: Number(minutes.value) * 60 },
        table_size: Number(size.value),
        start_when: Number(startWhen.value),
        pace: paces[pace.value],
        rated: rated.checked,
        private: priv.checked,
        bots_allowed: bots.checked,
      });
      if (t.invite_code) localStorage.setItem(`fib.tinvite.${t.id}`, t.invite_code);
      location.hash = `#/tournament/${t.id}${t.invite_code ? `/${t.invite_code}` : ''}`;
    } catch (ex) {
      err.textContent = ex.message;
    }
  });
  mount(app, h('div', { class: 'page' },
    h('section', { class: 'panel' }, h('h1', null, 'Tournaments'),
      rows.length
        ? h('table', { class: 'board', testid: 'tournament-list' },
          h('thead', null, h('tr', null, ...['Name', 'Game', 'Kind', 'Status', 'Players', 'Starts'].map((x) => h('th', null, x)))),
          h('tbody', null, ...rows))
        : h('p', { class: 'muted', testid: 'no-tournaments' }, 'No tournament yet: create one.')),
    form));
}

/** `#/tournament/<id>[/<invite>]`: one tournament, live. */
export async function tournamentPage(app, id, invite, ctx) {
  if (invite) localStorage.setItem(`fib.tinvite.${id}`, invite);
  invite = invite || localStorage.getItem(`fib.tinvite.${id}`);
  let t = await api.tournament(id, invite);
  if (ctx.stale()) return null;
  const me = ctx.me()?.id;
  const names = new Map();
  const render = () => {
    for (const s of t.standings) names.set(s.player, s.name);
    const member = t.standings.some((s) => s.player === me);
    const mine = t.games.find((g) => g.state === 'playing' && g.players.includes(me));
    const actions = [];
    if (!over(t) && !member) {
      actions.push(h('button', { class: 'btn primary', type: 'button', testid: 't-join', onclick: async () => {
        try {
          t = await api.joinTournament(id, invite);
          watch(id, me);
          render();
        } catch (ex) { toast(ex.message); }
      } }, 'Join'));
    }
    if (!over(t) && member && t.standings.find((s) => s.player === me)?.status === 'active') {
      actions.push(h('button', { class: 'btn', type: 'button', testid: 't-withdraw', onclick: async () => {
        try { t = await api.withdrawTournament(id); render(); } catch (ex) { toast(ex.message); }
      } }, 'Withdraw'));
    }
    if (t.status === 'registration' && me && t.created_by === me) {
      actions.push(h('button', { class: 'btn', type: 'button', testid: 't-cancel', onclick: async () => {
        try { t = await api.cancelTournament(id); render(); } catch (ex) { toast(ex.message); }
      } }, 'Cancel the tournament'));
    }
    if (mine) actions.push(h('a', { class: 'btn primary', href: `#/table/${mine.table_id}`, testid: 't-my-game' }, 'Go to your game'));
    const podium = t.podium.length
      ? h('section', { class: 'panel', testid: 't-podium' }, h('h2', null, 'Podium'),
        h('ol', null, ...t.podium.map((p) => h('li', null, names.get(p) || p))))
      : null;
    const standings = h('table', { class: 'board', testid: 't-standings' },
      h('thead', null, h('tr', null, ...['#', 'Player', 'Points', t.kind.type === 'swiss' ? 'Buchholz' : 'Streak', 'Games', 'W/D/L', 'Status'].map((x) => h('th', null, x)))),
      h('tbody', null, ...t.standings.map((s) => h('tr', { testid: 't-standing', class: s.player === me ? 'me' : '' },
        h('td', null, String(s.rank)),
        h('td', null, h('a', { href: `#/players/${s.player}/${encodeURIComponent(s.name)}` }, s.name)),
        h('td', { testid: 't-score' }, String(s.score)),
        h('td', null, t.kind.type === 'swiss' ? s.buchholz.toFixed(1) : String(s.streak)),
        h('td', null, String(s.games)),
        h('td', null, `${s.wins}/${s.draws}/${s.losses}`),
        h('td', null, s.status)))));
    const byRound = new Map();
    for (const g of t.games) byRound.set(g.round, [...(byRound.get(g.round) || []), g]);
    const rounds = [...byRound.entries()].map(([r, gs]) => h('section', { class: 'panel', testid: 't-round' },
      h('h3', null, t.kind.type === 'swiss' ? `Round ${r}` : 'Games'),
      h('ul', null, ...gs.map((g) => h('li', { testid: 't-game' },
        g.players.map((p) => names.get(p) || p).join(' – '), ' ',
        g.points ? `(${g.points.join(' – ')}) ` : `(${g.state}) `,
        g.state === 'finished'
          ? h('a', { href: `#/replay/${g.table_id}`, testid: 't-replay' }, 'replay')
          : h('a', { href: `#/table/${g.table_id}` }, 'watch'))))));
    mount(app, h('div', { class: 'page', testid: 'tournament-page' },
      h('section', { class: 'panel' },
        h('h1', { testid: 't-title' }, t.name),
        h('p', { class: 'muted' }, t.created_by === null ? 'Scheduled by this server · ' : 'Created by a player · ',
          `${ctx.title(t.game)} · ${kindText(t.kind)} · ${t.table_size} a table · ${t.rated ? 'rated' : 'unrated'} · `,
          h('span', { testid: 't-status' }, t.status),
          t.cancelled ? h('span', { testid: 't-cancelled' }, ` (${whyCancelled[t.cancelled] || t.cancelled})`) : '',
          t.status === 'running' && t.kind.type === 'swiss' ? ` · round ${t.round}` : '',
          t.ends_at ? ` · ends ${when(t.ends_at)}` : ''),
        t.invite_code ? h('p', null, 'Invite link: ', h('code', { testid: 't-invite' }, `${location.origin}/#/tournament/${t.id}/${t.invite_code}`)) : null,
        h('div', { class: 'row' }, ...actions)),
      podium,
      h('section', { class: 'panel' }, h('h2', null, t.status === 'registration' ? `Players (${t.standings.length})` : 'Standings'), standings),
      ...rounds.reverse()));
  };
  render();
  if (t.standings.some((s) => s.player === me) && !over(t)) watch(id, me);
  // This page's own follow, for anyone looking (a member's updates come the same way).
  const { LiveSocket } = await import('./socket.js');
  if (ctx.stale()) return null;
  const sock = new LiveSocket('/ws/lobby', {
    onOpen: () => sock.send({ type: 'tournament_follow', id, invite: invite || null }),
    onMessage: (m) => {
      if (m.type === 'tournament' && m.tournament.id === id) {
        t = m.tournament;
        render();
      }
    },
  });
  return () => sock.close();
}
