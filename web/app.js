// The browser client: sign-in, lobby, table pages, the daily Solitaire deal, my matches,
// leaderboard and rules, routed by the URL hash (#/, #/table/<id>[/<invite>] or the table's
// own address /table/<id>[/<invite>],
// #/daily/<target>[/<day>], #/matches, #/replay/<id>, #/players/<id>[/<name>], #/leaderboard/<game>[/duel|multi], #/rules/<kind>). The server is the authority: a table page renders only the latest
// `state` message from its socket and sends the player's choice from `legal`.

import { applyDeck, deckControl, h, morph, mount, onLayoutChange, toast } from './dom.js';
import { api, ApiError, dealUrl, early, earlyTable, roundsUrl } from './api.js';
import { gameModule, rulesPagesOf } from './games/registry.js';
import { accountPage, opponentsOf, quickPlayPanel, signInWithAccount } from './account.js';
// Only what the first paint of any page needs is imported here (the server preloads these
// in one round of requests); sockets, chat, patches, sound, replays and profiles come with
// `import()` when a page needs them.
// The online-play helpers (pace field, players bar, clocks, presence): the lobby and every
// table need them, but app.js need not wait for them before it runs (it asks for the
// session and a table's state first). The page preloads them (crates/server/src/assets.rs).
const online = import('./online.js');

const app = document.getElementById('app');
const connEl = document.getElementById('conn');
const meEl = document.getElementById('me');

const session = {
  me: null, // {id, name} once signed in
  games: [], // GET /api/games
  cleanup: null, // closes the current page's sockets
};

const gameTitle = (kind) => session.games.find((g) => g.kind === kind)?.title ?? kind;
const inviteKey = (id) => `fib.invite.${id}`;

// ---------------------------------------------------------------------------------------
// Connection status in the header
// ---------------------------------------------------------------------------------------

let retryTimer = null;
function showConn(status, detail) {
  clearInterval(retryTimer);
  connEl.dataset.state = status;
  const set = (t) => (connEl.querySelector('.conn-text').textContent = t);
  if (status === 'open') set('Connected');
  else if (status === 'connecting') set('Connecting…');
  else if (status === 'closed' || status === 'idle') set('');
  else if (status === 'waiting') {
    // Count down so the player sees the client is still trying.
    const until = Date.now() + detail;
    const tick = () => set(`Reconnecting in ${Math.max(0, Math.ceil((until - Date.now()) / 1000))} s`);
    tick();
    retryTimer = setInterval(tick, 500);
  }
}

function showMe() {
  mount(meEl, session.me ? h('a', { href: '#/account', testid: 'me-name', title: 'your display name: account and devices' }, session.me.name) : null);
}

// The header's sound toggle: remembered in this browser (the key `sound.js` reads; that
// module itself loads with the first table).
const MUTED = 'fib.muted';
const isMuted = () => localStorage.getItem(MUTED) === '1';
function showMute() {
  const btn = document.getElementById('mute');
  if (!btn) return;
  const muted = isMuted();
  btn.setAttribute('aria-pressed', String(muted));
  btn.textContent = muted ? 'Sound off' : 'Sound on';
}
document.getElementById('mute')?.addEventListener('click', () => {
  localStorage.setItem(MUTED, isMuted() ? '0' : '1');
  showMute();
});
showMute();
// The deck's colours (dom.js) before any card is drawn.
applyDeck();

/** The sounds a batch of game events makes (every game names its events alike). */
const soundsOf = (events) => {
  const kinds = new Set();
  for (const e of events || []) {
    if (e?.type === 'trick_won') kinds.add('trick');
    if (e?.type === 'round_ended' || e?.type === 'match_ended' || e?.type === 'game_over') kinds.add('round');
  }
  return kinds;
};

// A socket closed with 4001, or "sign out" on the account page: this device is nobody now.
function signedOut() {
  session.me = null;
  showMe();
  toast('This device is signed out.', 'info');
  if (location.hash === '#/') route();
  else location.hash = '#/';
}
window.addEventListener('fib:signed-out', signedOut);

// ---------------------------------------------------------------------------------------
// Router
// ---------------------------------------------------------------------------------------

function parseRoute() {
  // A table's own address (/table/<id>[/<invite>], the link players share) is the page
  // until a hash names another one (the lobby's is `#/`).
  const path = location.hash ? location.hash.replace(/^#\/?/, '')
    : location.pathname.startsWith('/table/') ? location.pathname.slice(1) : '';
  // A link with a broken escape (a lone "%") must not blank the page: such a part is
  // taken as it is written.
  const decode = (part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  return path.split('/').filter(Boolean).map(decode);
}

// Each route() call is one page visit. A page that awaits (an HTTP answer, a game module)
// checks `stale(visit)` after each await: the user may have moved on meanwhile, and a late
// page must neither draw over the newer one nor open a table socket nobody will close.
let visits = 0;
const stale = (visit) => visit !== visits;

async function route() {
  const visit = ++visits;
  const [page] = parseRoute();
  for (const link of document.querySelectorAll('nav a')) {
    const here = link.dataset.page === (page || 'lobby');
    link.classList.toggle('active', here);
    if (here) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  await showPage(visit);
  pageShown(visit, page);
}

// A page drawn: its heading names it in the window's title (WCAG 2.4.2; a table's page
// keeps its own, which says whose turn it is), and after a move from one page to another a
// screen reader hears which page this is (the focus stays where it was, on the link or
// button that led here, so nothing else would be said).
const pageAnnouncer = document.getElementById('page-announcer');
let pagesShown = 0;
function pageShown(visit, page) {
  if (stale(visit)) return;
  const heading = app.querySelector('h1')?.textContent.trim();
  if (!heading) return;
  if (page !== 'table') document.title = heading.includes('Fibonacci Cards') ? heading : `${heading} · Fibonacci Cards`;
  if (pagesShown++ > 0 && pageAnnouncer) pageAnnouncer.textContent = heading;
}

async function showPage(visit) {
  session.cleanup?.();
  session.cleanup = null;
  showConn('idle');
  const [page, a, b] = parseRoute();
  window.scrollTo(0, 0);
  try {
    if (page === 'rules') return await rulesPage(visit, a || 'trump');
    if (page === 'leaderboard') return await leaderboardPage(visit, a || 'trump', b === 'multi' ? 'multi' : 'duel');
    if (page === 'players' && a) {
      const { profilePage } = await import('./profile.js');
      return await profilePage(app, a, b || null, { title: gameTitle, stale: () => stale(visit) });
    }
    if (page === 'replay' && a) {
      const { replayPage } = await import('./replay.js');
      session.cleanup = await replayPage(app, a, { title: gameTitle, stale: () => stale(visit) });
      return;
    }
    if (!session.me) return signInPage();
    if (page === 'table' && a) return await tablePage(visit, a, b || localStorage.getItem(inviteKey(a)) || null);
    if (page === 'matches') return await matchesPage(visit);
    if (page === 'account') return await accountPage(app, { stale: () => stale(visit), signedOut });
    if (page === 'daily') return await dailyPage(visit, Number(a) || 21, b || null);
    if (page === 'tournaments' || (page === 'tournament' && a)) {
      const t = await import('./tournaments.js');
      const ctx = { title: gameTitle, stale: () => stale(visit), me: () => session.me };
      if (page === 'tournaments') return await t.tournamentsPage(app, ctx);
      session.cleanup = await t.tournamentPage(app, a, b || null, ctx);
      return;
    }
    return await lobbyPage(visit);
  } catch (e) {
    if (stale(visit)) return;
    if (e instanceof ApiError && e.status === 401) {
      // The cookie is gone or unknown: ask for a name again, then come back here.
      session.me = null;
      showMe();
      return signInPage();
    }
    mount(app, h('section', { class: 'panel' }, h('h1', null, 'Something went wrong'), h('p', { testid: 'page-error' }, e.message)));
  }
}

// ---------------------------------------------------------------------------------------
// Sign in
// ---------------------------------------------------------------------------------------

function signInPage() {
  const input = h('input', {
    // The server counts 24 characters; the browser counts UTF-16 units, two for an emoji.
    id: 'name', name: 'name', type: 'text', maxlength: '48', required: true,
    autocomplete: 'nickname', placeholder: 'e.g. Leonardo', testid: 'name-input',
  });
  const err = h('p', { class: 'form-error', testid: 'name-error', role: 'alert' });
  const form = h('form', { class: 'panel signin', testid: 'signin-form' },
    h('h1', null, 'Welcome to Fibonacci Cards'),
    h('p', null, 'Pick a display name to play. No account needed: this browser remembers you.'),
    h('label', { for: 'name' }, 'Display name'),
    h('div', { class: 'row' }, input, h('button', { class: 'btn primary', type: 'submit', testid: 'name-submit' }, 'Play')),
    err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      const res = await api.guest(input.value);
      session.me = res.player;
      showMe();
      route();
    } catch (ex) {
      err.textContent = ex.message;
    }
  });
  const account = signInWithAccount((player) => {
    session.me = player;
    showMe();
    route();
  });
  mount(app, h('div', { class: 'welcome' }, form, account));
  input.focus();
}

// ---------------------------------------------------------------------------------------
// Lobby
// ---------------------------------------------------------------------------------------

// A person's name as the sentences around it use it: isolated (FSI … PDI), so that a name
// written right to left keeps to itself and does not carry the words or numbers after it
// into its direction ("ابراهيم won trick 3" must not read as "3 trick won ابراهيم"). The
// marks are invisible, and a plate or a cell shows the name as typed.
function seatText(s, i) {
  if (s.kind === 'player') return `\u2068${s.name}\u2069`;
  if (s.kind === 'bot') return `Bot ${i + 1}${s.level ? ` (${levelName(s.level)})` : ''}`;
  return 'empty';
}

const LEVELS = ['easy', 'normal', 'hard'];
// "random" is what tables from before the three levels say; it plays as easy.
const levelName = (l) => (l === 'random' ? 'easy' : l);

const mySeatIn = (t) =>
  session.me ? t.seats.findIndex((s) => s.kind === 'player' && s.id === session.me.id) : -1;

async function lobbyPage(visit) {
  const { paceField } = await online;
  if (stale(visit)) return;
  const games = session.games.length ? session.games : [{ kind: 'trump', title: "Fibonacci's Trump", min_players: 2, max_players: 4 }];
  const gameSel = h('select', { id: 'c-game', testid: 'create-game' },
    games.map((g) => h('option', { value: g.kind, selected: g.kind === 'trump' }, g.title)));
  const seatsSel = h('select', { id: 'c-seats', testid: 'create-seats' });
  // A game module may add its own option fields (`createOptions(container)` returns a
  // function that yields the options JSON) and name a seat count (`seatLabel(n)`, e.g.
  // a 1-seat rummy table is Solitaire). Without one, the server's defaults apply.
  const optsBox = h('div', { class: 'create-options', testid: 'create-options' });
  let readOptions = () => null;
  let mod = null;
  let token = 0;
  const fillSeats = () => {
    const g = games.find((x) => x.kind === gameSel.value) ?? games[0];
    const keep = seatsSel.value;
    mount(seatsSel, Array.from({ length: g.max_players - g.min_players + 1 }, (_, i) => {
      const n = g.min_players + i;
      const label = mod?.seatLabel?.(n) ?? (n === 1 ? '1 player' : `${n} players`);
      return h('option', { value: String(n) }, label);
    }));
    seatsSel.value = keep && [...seatsSel.options].some((o) => o.value === keep) ? keep : String(Math.max(g.min_players, Math.min(4, g.max_players)));
  };
  const pickGame = async () => {
    const my = ++token;
    mod = null;
    readOptions = () => null;
    mount(optsBox);
    fillSeats();
    const m = await gameModule(gameSel.value);
    if (my !== token) return; // another game was picked meanwhile
    mod = m;
    if (typeof m.createOptions === 'function') readOptions = m.createOptions(optsBox) || (() => null);
    fillSeats();
  };
  gameSel.addEventListener('change', pickGame);
  pickGame();
  const priv = h('input', { type: 'checkbox', id: 'c-private', testid: 'create-private' });
  const bots = h('input', { type: 'checkbox', id: 'c-bots', testid: 'create-bots', checked: true });
  const botLevel = h('select', { id: 'c-bot-level', testid: 'create-bot-level', 'aria-label': 'Bot level' },
    LEVELS.map((l) => h('option', { value: l, selected: l === 'normal' }, l)));
  const err = h('p', { class: 'form-error', role: 'alert' });
  const [paceLabel, readPace] = paceField();
  const form = h('form', { class: 'panel create', testid: 'create-form' },
    h('h2', null, 'New table'),
    h('div', { class: 'fields' },
      h('label', null, 'Game', gameSel),
      h('label', null, 'Seats', seatsSel),
      optsBox,
      h('label', { class: 'check' }, bots, 'Fill empty seats with bots at start'),
      h('label', null, 'Bot level', botLevel),
      paceLabel,
      h('label', { class: 'check' }, priv, 'Private (invite link only)')),
    h('button', { class: 'btn primary', type: 'submit', testid: 'create-submit' }, 'Create table'),
    err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      const res = await api.createTable({
        game: gameSel.value,
        seats: Number(seatsSel.value),
        options: readOptions() ?? null,
        private: priv.checked,
        bots: bots.checked ? botLevel.value : null,
        join: true,
        pace: readPace(),
      });
      const id = res.table.id;
      if (res.invite_code) {
        localStorage.setItem(inviteKey(id), res.invite_code);
        location.hash = `#/table/${id}/${res.invite_code}`;
      } else {
        location.hash = `#/table/${id}`;
      }
    } catch (ex) {
      err.textContent = ex.message;
    }
  });

  const list = h('div', { class: 'table-list', testid: 'table-list' }, h('p', { class: 'muted' }, 'Loading tables…'));
  // Which game's tables to show (remembered for the visit).
  const filter = h('select', { id: 'lobby-filter', testid: 'lobby-filter', 'aria-label': 'Show the tables of' },
    h('option', { value: '' }, 'All games'),
    games.map((g) => h('option', { value: g.kind }, g.title)));
  // The server shows the first of the lobby's tables (of one game, once picked): it sends
  // them again for the game picked, and `total` says how many there are in all.
  filter.addEventListener('change', () => {
    send({ type: 'lobby_filter', game: filter.value || null });
    renderTables([...listed.values()]);
  });
  let total = 0;
  const renderTables = (all) => {
    const tables = filter.value ? all.filter((t) => t.game === filter.value) : all;
    if (!tables.length) {
      mount(list, h('p', { class: 'muted', testid: 'no-tables' }, 'No open tables right now. Create one!'));
      return;
    }
    // Open tables first (those can be joined), then the matches being played.
    const sorted = [...tables].sort((x, y) => (x.status === 'open' ? 0 : 1) - (y.status === 'open' ? 0 : 1) || y.created_at - x.created_at);
    const more = total - tables.length;
    mount(list, sorted.map(tableRow),
      more > 0
        ? h('p', { class: 'muted small', testid: 'more-tables' },
          `and ${more.toLocaleString('en')} more ${more === 1 ? 'table' : 'tables'}, older or in play${filter.value ? '' : ': pick a game to see more of its own'}`)
        : null);
  };
  // The lobby sends its list on connect, then only what changed; and its chat.
  const listed = new Map();
  let sock = null;
  let left = false;
  const send = (msg) => sock?.send(msg) ?? false;
  const quick = quickPlayPanel({ games, title: gameTitle, send });
  session.cleanup = () => {
    left = true;
    quick.stop();
    sock?.close();
  };
  const side = h('div', { class: 'lobby-side' }, quick.el, form);
  mount(app,
    h('h1', { class: 'sr-only' }, 'Lobby'),
    h('div', { class: 'lobby' },
      h('section', { class: 'panel' },
        h('div', { class: 'panel-head' }, h('h2', null, 'Tables'), h('span', { class: 'muted small' }, 'public tables, live'), filter),
        list),
      side));
  // The live list and the chat come once their modules are in: the page is drawn first.
  // Challenges (docs/protocol.md §4.2): web/challenge.js comes when first needed (the
  // button below, or a challenge arriving), not with the lobby's first load.
  let challenges = null;
  let loadingChallenges = null;
  const waitingMsgs = [];
  const challengeSlot = h('section', { class: 'panel', testid: 'challenge-slot' },
    h('h2', null, 'Challenge'),
    h('button', { class: 'btn', type: 'button', testid: 'challenge-open', onclick: () => loadChallenges(true) }, 'Challenge a house bot…'));
  const loadChallenges = (open) => {
    loadingChallenges ??= import('./challenge.js').then((ch) => {
      if (left) return;
      challenges = ch.lobbyChallenges({ games, title: gameTitle, send, slot: challengeSlot });
      for (const m of waitingMsgs.splice(0)) challenges.onMessage(m);
    });
    if (open) loadingChallenges.then(() => challenges?.open());
  };
  Promise.all([import('./socket.js'), import('./chat.js')]).then(([{ LiveSocket }, { chatPanel }]) => {
    if (left) return;
    const chat = chatPanel({ title: 'Lobby chat', me: () => session.me, send, testid: 'lobby-chat' });
    const stopFirst = session.cleanup;
    session.cleanup = () => { stopFirst(); challenges?.stop(); };
    // Last in its column (and below the list on a phone): nothing above it moves.
    side.append(challengeSlot, chat.el);
    let lobbyOpened = false;
    sock = new LiveSocket('/ws/lobby', {
      onOpen: () => {
        // A new socket shows every game's tables until told otherwise.
        if (filter.value) send({ type: 'lobby_filter', game: filter.value });
        quick.onReconnect(); challenges?.onReconnect(); if (lobbyOpened) newVersionCheck(); lobbyOpened = true;
      },
      onMessage: (m) => {
        if (challenges?.onMessage(m)) return;
        if (!challenges && m.type.startsWith('challenge_') && m.type !== 'challenge_started') {
          waitingMsgs.push(m);
          loadChallenges(false);
          return;
        }
        if (quick.onMessage(m)) return;
        if (chat.onMessage(m)) return;
        if (m.type === 'tables') {
          listed.clear();
          for (const t of m.tables) listed.set(t.id, t);
          total = m.total;
        } else if (m.type === 'changes') {
          for (const t of m.tables) listed.set(t.id, t);
          for (const id of m.removed) listed.delete(id);
          total = m.total;
        } else return;
        renderTables([...listed.values()]);
      },
      onStatus: showConn,
    });
  }, (e) => toast(`The lobby could not load: ${e.message}`));
}

// After the match: ask for a rematch (everyone must accept; bots do), see who has, and go to
// the new table as soon as it exists.
function rematchPanel(t, me, send) {
  const r = t.rematch;
  if (r?.table) {
    if (location.hash !== `#/table/${r.table}`) setTimeout(() => { location.hash = `#/table/${r.table}`; }, 0);
    return h('p', { testid: 'rematch-status' }, 'Rematch agreed: going to the new table…');
  }
  const name = (i) => seatText(t.seats[i], i);
  // `declined_by` is a seat or null: compared with `>= 0`, null would count as seat 0
  // (`null >= 0` is true) and hide the buttons from everyone once anyone accepted.
  const declined = typeof r?.declined_by === 'number';
  const mine = me !== null && r?.accepted?.[me];
  let status;
  if (declined) status = `${name(r.declined_by)} declined the rematch.`;
  else if (r && me !== null && !mine) {
    const asking = r.accepted.map((a, i) => (a ? name(i) : null)).filter(Boolean);
    status = `${asking.join(' and ')} would like a rematch.`;
  } else if (r) {
    const waiting = r.accepted.map((a, i) => (a ? null : name(i))).filter(Boolean);
    status = `Rematch: waiting for ${waiting.join(' and ')}.`;
  } else status = 'Play the same players again?';
  const open = !declined;
  return h('section', { class: 'panel rematch', testid: 'rematch-panel' },
    h('p', { testid: 'rematch-status', 'aria-live': 'polite' }, status),
    me !== null && open && !mine
      ? h('div', { class: 'row' },
        h('button', { class: 'btn primary', type: 'button', testid: 'rematch-accept', onclick: () => send(true) }, 'Rematch'),
        h('button', { class: 'btn', type: 'button', testid: 'rematch-decline', onclick: () => send(false) }, 'No thanks'))
      : null,
    h('a', { class: 'btn', href: '#/', testid: 'back-to-lobby' }, 'Back to the lobby'));
}

// A new client version. The server serves the files it started with; after a restart with
// other files, an open page would load new modules beside its old ones (a walk saw it). So
// when a socket comes back after being lost, the page compares its version (the server's
// `fib-client` mark in the page) with the server's page now, and offers a reload.
const myBuild = document.querySelector('meta[name="fib-client"]')?.content ?? null;
let newVersionShown = false;
async function newVersionCheck() {
  if (!myBuild || newVersionShown) return;
  try {
    const page = await (await fetch('/', { cache: 'no-store' })).text();
    const now = page.match(/<meta name="fib-client" content="([0-9a-f]+)">/)?.[1];
    if (!now || now === myBuild || newVersionShown) return;
    newVersionShown = true;
    document.body.append(h('div', { class: 'new-version', role: 'status', testid: 'new-version' },
      'A new version of Fibonacci Cards is out. ',
      h('button', { class: 'btn primary small', type: 'button', testid: 'new-version-reload', onclick: () => location.reload() }, 'Reload'),
      ' (your games are kept)'));
  } catch {
    // Offline again: the next reconnection asks again.
  }
}

// Refusals every game words alike (a game module may word its own first).
const REFUSALS = {
  // The server's text names versions, which mean nothing to a player.
  stale_version: 'The table changed before your move arrived (a move from another tab, a clock or a bot came first). It now shows the table as it is: play again if it is still your turn.',
};

function tableRow(t) {
  const mine = mySeatIn(t);
  const free = t.seats.filter((s) => s.kind === 'empty').length;
  const taken = t.seats.length - free;
  let action;
  const go = () => (location.hash = `#/table/${t.id}`);
  // The row's buttons are alike from row to row ("Join", "Watch"): a screen reader's list
  // of buttons says which table each acts on.
  // A label is read out, not drawn: the names as typed.
  const which = `the ${gameTitle(t.game)} table of ${t.seats.map((s, i) => (s.kind === 'player' ? s.name : seatText(s, i))).join(', ')}`;
  if (mine >= 0) {
    const verb = t.status === 'open' ? 'Open' : 'Resume';
    action = h('button', { class: 'btn primary', type: 'button', onclick: go, testid: 'table-open', 'aria-label': `${verb} ${which}` }, verb);
  } else if (t.status === 'open' && free > 0) {
    action = h('button', {
      class: 'btn primary', type: 'button', testid: 'table-join', 'aria-label': `Join ${which}`,
      onclick: async () => {
        try {
          await api.join(t.id, null, null);
          go();
        } catch (e) {
          toast(e.message);
        }
      },
    }, 'Join');
  } else action = null;
  const watch = mine >= 0 ? null : h('button', { class: 'btn', type: 'button', onclick: go, testid: 'table-watch', 'aria-label': `Watch ${which}` }, 'Watch');
  return h('div', {
    class: `table-row status-${t.status}`,
    testid: 'table-row',
    dataset: { tableId: t.id, game: t.game, status: t.status, free: String(free) },
  },
    h('div', { class: 'tr-main' },
      h('div', { class: 'tr-title' }, h('strong', null, gameTitle(t.game)),
        h('span', { class: `pill pill-${t.status}` }, t.status === 'open' ? `${taken}/${t.seats.length} seated` : `playing · round ${t.round}`),
        t.bots ? h('span', { class: 'pill' }, 'bots') : null),
      h('div', { class: 'tr-seats' }, t.seats.map((s, i) =>
        h('span', { class: `seat-chip seat-${s.kind}` }, seatText(s, i))))),
    h('div', { class: 'tr-actions' }, action, watch));
}

// ---------------------------------------------------------------------------------------
// Table
// ---------------------------------------------------------------------------------------

/** The modules of a table page besides its game's (asked for at start-up on a table). */
const tableModules = () => Promise.all([import('./socket.js'), import('./chat.js'), import('./patch.js'), import('./sound.js')]);

async function tablePage(visit, id, invite) {
  mount(app, h('p', { class: 'muted' }, 'Opening table…'));
  // The table's own modules load while the table is asked for.
  const modules = tableModules();
  // The table's state over HTTP first (asked for at start-up when the page opened here,
  // alongside the session): the table is drawn from it as soon as the game module is in,
  // and the socket then opens with `since` and gets only what changed. A wrong id or a
  // missing invite gets a clear message instead of a socket that retries forever.
  let first;
  try {
    first = await (takeEarlyState(id) ?? api.tableState(id, invite));
  } catch (e) {
    if (stale(visit)) return;
    if (e instanceof ApiError && (e.status === 404 || e.status === 403)) {
      mount(app, h('section', { class: 'panel' },
        h('h1', null, e.status === 404 ? 'No such table' : 'Private table'),
        h('p', { testid: 'page-error' }, e.message),
        h('a', { href: '#/', class: 'btn' }, 'Back to the lobby')));
      return;
    }
    throw e;
  }
  if (stale(visit)) return;
  if (invite) localStorage.setItem(inviteKey(id), invite);
  // The page's frame (title, status, players) is drawn as soon as these are in; the game
  // follows with its module (loading meanwhile), below it, so nothing drawn moves.
  const modReady = gameModule(first.table.game);
  // The frame needs only these; the socket's modules (asked for at the same time) are
  // awaited after it is drawn.
  const [{ chatPanel }, { parkedBanner, playersBar, reportVisibility, standInBanner, tickClocks }] = await Promise.all([import('./chat.js'), online]);
  if (stale(visit)) return;
  let mod = null;

  let latest = { ...first, events: [] }; // the latest state message: the only thing rendered
  let receivedAt = performance.now(); // when `latest` last changed: clocks count from here
  let resyncing = false; // a `sync` was sent for a missed or broken patch: wait for the state
  // The first state of a (re)opened socket may come from a table that moved to another
  // server: its versions count from the table's new epoch (version / 2^32), so a higher
  // epoch wins even at a lower count. (Versions of a server from before epochs were
  // microsecond times, above 2^50: the first epoch's state replaces them once.)
  let justOpened = false;
  const epochOf = (v) => Math.floor(v / 2 ** 32);
  const newer = (m) => m.version >= latest.version
    || (justOpened && (latest.version >= 2 ** 50 || epochOf(m.version) > epochOf(latest.version)));
  let connected = false;
  let everConnected = false; // the socket has opened once (after that, down means lost)
  let everSynced = false; // a state or patch has come over the socket (the HTTP state is older)
  let failures = 0; // consecutive failed connects
  let busy = false;
  let busyTimer = null;
  // The game as it was when a move was last sent, and, when the connection was lost before
  // its answer came, that again: the table after reconnecting says whether it arrived (an
  // accepted move changes the game; presence and clocks are the table's part, not the
  // game's).
  let sentOn = null;
  let inDoubt = null;
  // What the page says after reconnecting, once the table is back.
  const settleDoubt = () => {
    if (inDoubt === null || !latest) return;
    const me = latest.you?.kind === 'player' ? latest.you.seat : null;
    if (JSON.stringify(latest.view) === inDoubt) toast('Your move did not reach the server: play it again.');
    // The game moved on meanwhile (others' moves, a bot, a clock): it shows whether the move
    // is there; if the turn is still the player's, they should look.
    else if (me !== null && latest.table.to_act?.includes(me)) toast('It is your turn: if the table does not show your move, play it again.');
    inDoubt = null;
  };
  let refusal = null; // the latest refused move, in words, until the table moves on
  let refusalAt = 0;
  let refusalCode = '';
  let ratings = null; // after the match: each person's rating before and after it

  // Each person's rating change from this match (docs/ratings.md): found in their
  // rating history by this table's id. Bots are not rated; fewer than two people, nobody.
  async function loadRatingChanges(t) {
    ratings = { rows: [], note: 'Loading rating changes…' };
    const people = t.seats.map((s, i) => ({ s, i })).filter(({ s }) => s.kind === 'player');
    if (people.length < 2) {
      ratings = { rows: [], note: 'Not rated: matches count for ratings only between two people or more (bots are not rated).' };
      render();
      return;
    }
    const pool = people.length === 2 ? 'duel' : 'multi';
    const start = pool === 'duel' ? 1500 : 25;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        const rows = await Promise.all(people.map(async ({ s, i }) => {
          const points = await api.ratingHistory(s.id, t.game, pool);
          const k = points.findIndex((p) => p.table_id === id);
          if (k < 0) return null;
          return { seat: i, name: s.name, before: k > 0 ? points[k - 1].rating : start, after: points[k].rating };
        }));
        if (rows.every(Boolean)) {
          ratings = { rows, note: null, pool };
          render();
          return;
        }
      } catch {
        // Tried again below.
      }
      // The result may still be on its way to the database.
      await new Promise((r) => setTimeout(r, 700));
    }
    ratings = { rows: [], note: 'Rating changes are not available yet: see the players\' profiles.' };
    render();
  }

  function ratingPanel(t) {
    const fmt = (x) => (ratings?.pool === 'multi' ? x.toFixed(1) : Math.round(x).toString());
    return h('section', { class: 'panel rating-changes', testid: 'rating-changes' },
      h('h2', null, 'Ratings'),
      ratings?.note ? h('p', { class: 'muted' }, ratings.note) : null,
      ratings?.rows?.length ? h('ul', { class: 'recent' }, ratings.rows.map((r) => {
        const d = r.after - r.before;
        return h('li', { testid: 'rating-change', dataset: { seat: String(r.seat) } },
          h('a', { href: `#/players/${t.seats[r.seat].id}/${encodeURIComponent(r.name)}` }, r.name),
          ` ${fmt(r.before)} → ${fmt(r.after)} `,
          h('strong', { class: d >= 0 ? 'gain' : 'loss' }, `(${d >= 0 ? '+' : '−'}${fmt(Math.abs(d))})`));
      })) : null);
  }
  const root = h('div', { class: 'table-page', testid: 'table-page', dataset: { tableId: id } });
  const gameRoot = h('div', { class: 'game-root' });
  // The chat panel sits beside the re-rendered part: typing survives every update.
  let sock = null; // opened once its module is in, after the first frame
  const chat = chatPanel({ title: 'Table chat', me: () => session.me, send: (msg) => sock?.send(msg) ?? false });
  // Shown with the first state, in the same frame as the table: below the table on a phone,
  // it would otherwise be pushed down as the table fills in (layout shift).
  chat.el.hidden = true;
  // Screen readers hear each move (the game module says it in words) and whose turn it is.
  const announcer = h('div', { class: 'sr-only', 'aria-live': 'polite', testid: 'announcer' });
  mount(app, h('div', { class: 'table-layout' }, root, chat.el), announcer);
  let wasMyTurn = false;
  // The match's end is brought into view once, when it comes (a phone stayed at the empty
  // hand, the result far above); a table opened finished starts at the top anyway.
  let endShown = first.table.status === 'finished';
  // After each update: the events in words, and the sounds they make.
  const onUpdate = () => {
    const events = latest.events || [];
    const said = mod?.describe?.(events, seatName, mySeat(), latest.view);
    if (said) announcer.textContent = said;
    const kinds = soundsOf(events);
    const me = mySeat();
    const myTurn = me !== null && latest.table.status === 'playing' && latest.table.to_act.includes(me);
    if (myTurn && !wasMyTurn) kinds.add('turn');
    wasMyTurn = myTurn;
    for (const k of ['round', 'trick', 'turn']) {
      if (kinds.has(k)) {
        sound.play(k);
        break; // one sound at a time: the most telling one
      }
    }
  };

  const seatName = (i) => {
    const s = latest?.table.seats[i];
    return s ? seatText(s, i).replace(/^empty$/, `Seat ${i + 1}`) : `Seat ${i + 1}`;
  };
  const mySeat = () => (latest?.you?.kind === 'player' ? latest.you.seat : null);

  const act = (action) => {
    if (busy || !latest) return false;
    const ok = sock?.send({ type: 'act', version: latest.version, action }) ?? false;
    if (!ok) {
      toast('Not connected: your move was not sent. Reconnecting…');
      return false;
    }
    // One move at a time: until the answer arrives, a second click would be stale.
    busy = true;
    sentOn = JSON.stringify(latest.view);
    clearTimeout(busyTimer);
    // No answer in 5 s: is the link alive? A dead one is dropped within 8 s, and the page
    // then says the move may be lost (onStatus). A live but slow one lets the hand go at
    // 15 s, saying so: the answer will still show when it comes.
    busyTimer = setTimeout(() => {
      sock?.probe();
      busyTimer = setTimeout(() => {
        busy = false;
        toast('No answer to your move yet: the table will show it when the server answers.');
        render();
      }, 10_000);
    }, 5000);
    render();
    return true;
  };

  const lobbyAction = (fn) => async () => {
    try {
      await fn();
    } catch (e) {
      toast(e.message);
    }
  };

  function render() {
    // After the player left the page: the socket's closing still reports, and drawing
    // would set the title ("● Your turn") over the next page's.
    if (!latest || stale(visit)) return;
    const me = mySeat();
    // Drawn from the HTTP state before the socket's first message, the table still counts this
    // player as gone (and a bot may be standing in for them); the socket's connection ends
    // both a moment later (the server clears a stand-in when its player connects). Saying
    // otherwise for that moment would only make the page jump.
    const t = !everSynced && me !== null && latest.table.seats[me]?.kind === 'player'
      ? { ...latest.table, seats: latest.table.seats.map((s, i) => (i === me ? { ...s, connected: true, presence: 'connected', stand_in: false } : s)) }
      : latest.table;
    const seated = me !== null;
    const free = t.seats.filter((s) => s.kind === 'empty').length;
    const canStart = seated && t.status === 'open' && (free === 0 || !!t.bots);

    const head = h('section', { class: 'table-head' },
      h('div', { class: 'th-title' },
        h('h1', null, mod?.tableTitle?.(t) ?? gameTitle(t.game)),
        h('span', { class: `pill pill-${t.status}`, testid: 'table-status' }, t.status),
        t.private ? h('span', { class: 'pill' }, 'private') : null,
        h('span', { class: 'muted small' }, t.seats.length === 1 ? "1 seat" : `${t.seats.length} seats`, t.spectators ? ` · ${t.spectators} watching` : ''),
        h('a', { href: `#/rules/${mod?.rulesPage?.(t) ?? t.game}`, class: 'small', testid: 'rules-link' }, 'How to play')),
      h('div', { class: 'th-actions' },
        t.status === 'open' && seated
          ? h('button', { class: 'btn', type: 'button', testid: 'leave-button', onclick: lobbyAction(() => api.leave(id)) }, 'Leave seat')
          : null,
        t.status === 'open' && seated
          ? h('button', {
            class: 'btn primary', type: 'button', testid: 'start-button', disabled: !canStart,
            title: canStart ? '' : 'Every seat must be taken (this table has no bots)',
            onclick: lobbyAction(() => api.start(id)),
          }, free && t.bots ? `Start with ${free} bot${free > 1 ? 's' : ''}` : 'Start match')
          : null));

    // Before the socket's first opening the page shows the state fetched over HTTP: not
    // "lost", only not live yet (moves wait for the socket either way).
    const offline = !connected && everConnected;
    const statusLine = h('p', { class: `status-line ${offline ? 'offline' : ''}`, testid: 'status-line', role: 'status' },
      offline ? h('span', { class: 'offline-note' }, 'Connection lost, reconnecting… ') : null,
      statusText(t, me));
    root.classList.toggle('offline', offline);
    root.classList.toggle('connecting', !connected && !everConnected);
    // A background tab tells the player it is their turn.
    document.title = `${me !== null && t.to_act.includes(me) ? '● Your turn · ' : ''}${gameTitle(t.game)} · Fibonacci Cards`;

    const parts = [head, statusLine];
    if (t.private && (invite || localStorage.getItem(inviteKey(id)))) {
      const code = invite || localStorage.getItem(inviteKey(id));
      // The table's own address: it opens with the table in the page.
      const link = `${location.origin}/table/${id}/${code}`;
      parts.push(h('div', { class: 'invite' },
        h('span', { class: 'muted small' }, 'Invite link:'),
        h('input', { type: 'text', readonly: true, value: link, testid: 'invite-link', onfocus: (e) => e.target.select() }),
        h('button', {
          class: 'btn small', type: 'button', testid: 'invite-copy',
          onclick: async () => {
            try {
              await navigator.clipboard.writeText(link);
              toast('Invite link copied', 'info', 2000);
            } catch {
              toast('Copy failed: select the link and copy it by hand.');
            }
          },
        }, 'Copy')));
    }
    if (t.status === 'open') parts.push(seatsPanel(t, me));
    else {
      parts.push(parkedBanner(t));
      parts.push(standInBanner(t, me, () => sock?.send({ type: 'presence', away: false })));
      parts.push(playersBar(t, me, seatName));
    }
    if (refusal && latest.version === refusalAt) {
      // Not an alert itself: the toast of the same words is (said once, not twice).
      parts.push(h('p', { class: 'refusal', testid: 'refusal', dataset: { code: refusalCode } }, refusal));
    }
    if (!mod) {
      // Only the frame until the game's module is in: what goes below the game waits too.
      morph(root, parts);
      return;
    }
    chat.el.hidden = false;
    if (latest.view !== null && latest.view !== undefined) {
      // An abandoned match's game still names whose turn it was; nobody's turn is drawn
      // (a walk saw "your turn" on a table the page also called abandoned).
      const shown = latest.table.status === 'abandoned' && latest.view && 'turn' in latest.view
        ? { ...latest, view: { ...latest.view, turn: null } }
        : latest;
      mod.render(gameRoot, shown, { act, busy, seatName, mySeat: me, tableId: id });
      // The game's sections are h3s: this keeps the outline without a jump from the h1.
      parts.push(h('h2', { class: 'sr-only' }, 'The game'));
      parts.push(gameRoot);
    }
    if (t.status === 'finished') {
      if (ratings === null) loadRatingChanges(t);
      parts.push(ratingPanel(t));
      parts.push(rematchPanel(t, me, (accept) => sock?.send({ type: 'rematch', accept })));
      parts.push(h('p', null, h('a', { class: 'btn', href: `#/replay/${id}`, testid: 'replay-link' }, 'Replay this match step by step')));
    }
    if (t.status !== 'open') {
      parts.push(fairnessPanel(id, latest.fairness || [], t.round));
    }
    parts.push(deckControl());
    // Patched into the page, not replaced: focus, open selects and typed text survive.
    morph(root, parts);
    if (t.status === 'finished' && !endShown) {
      endShown = true;
      (gameRoot.querySelector('[data-testid="match-result"], [data-testid="result"]') ?? root.querySelector('[data-testid="status-line"]'))
        ?.scrollIntoView({ block: 'start', behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth' });
    }
    // Keyboard play: on your turn, when the focus is nowhere (the card just played, or
    // the start button, is gone), it goes to your first playable card; Enter plays it.
    // After the frame is painted: focusing forces a layout, which inside this task would
    // be done twice (a slow phone spent ~100 ms on it at the table's first draw).
    requestAnimationFrame(() => setTimeout(() => {
      if (stale(visit) || !latest) return;
      const nowhere = !document.activeElement || document.activeElement === document.body;
      const lt = latest.table;
      if (nowhere && me !== null && lt.status === 'playing' && lt.to_act.includes(me) && !busy) {
        // A playable card where the game marks them (Trump, Fibonachos); else the turn's
        // main button (the rummy games' "Draw 2", "Discard here"); else a card of the hand
        // to choose (a walk found focus on the page's body after every rummy move).
        const target = gameRoot.querySelector('[data-testid="hand-card"][data-playable="true"]')
          ?? gameRoot.querySelector('button.primary:not([disabled])')
          ?? gameRoot.querySelector('button[data-testid="hand-card"]:not([disabled])');
        target?.focus({ preventScroll: true });
      }
    }, 0));
  }

  function seatsPanel(t, me) {
    return h('section', { class: 'panel seats-panel' },
      h('h3', null, 'Seats'),
      h('div', { class: 'seat-list' }, t.seats.map((s, i) =>
        h('div', { class: `seat-row seat-${s.kind} ${i === me ? 'me' : ''}`, testid: `seat-row-${i}` },
          h('span', { class: 'seat-no' }, `Seat ${i + 1}`),
          h('span', { class: 'seat-who' },
            s.kind === 'player' ? [h('span', { class: `dot ${s.connected ? 'on' : 'off'}`, title: s.connected ? 'connected' : 'not connected' }), s.name, i === me ? ' (you)' : '', s.bot_account ? h('span', { class: 'pill pill-bot', title: 'A bot account: a program plays this seat' }, 'BOT') : '']
              : s.kind === 'bot' ? `Bot (${levelName(s.level)})` : h('span', { class: 'muted' }, t.bots ? `empty (a ${levelName(t.bots)} bot sits here at start)` : 'empty')),
          s.kind === 'empty' && me === null
            ? h('button', {
              class: 'btn primary small', type: 'button', testid: `seat-join-${i}`, 'aria-label': `Sit in seat ${i + 1}`,
              onclick: lobbyAction(() => api.join(id, i, invite || localStorage.getItem(inviteKey(id)))),
            }, 'Sit here')
            : null,
          // Before the start, a seated player picks a bot (and its level) per empty seat.
          t.status === 'open' && me !== null && s.kind === 'empty'
            ? h('select', {
              class: 'small', testid: `seat-bot-${i}`, 'aria-label': `Put a bot in seat ${i + 1}`,
              onchange: (e) => e.target.value && lobbyAction(() => api.seatBot(id, i, e.target.value))(),
            }, h('option', { value: '' }, 'Add a bot…'), LEVELS.map((l) => h('option', { value: l }, `${l} bot`)))
            : null,
          t.status === 'open' && me !== null && s.kind === 'bot'
            ? h('button', {
              class: 'btn small', type: 'button', testid: `seat-unbot-${i}`, 'aria-label': `Remove the bot from seat ${i + 1}`,
              onclick: lobbyAction(() => api.seatBot(id, i, null)),
            }, 'Remove bot')
            : null))),
      me === null ? h('p', { class: 'muted small' }, 'You are watching. Take a free seat to play.') : null);
  }

  function statusText(t, me) {
    const v = latest.view;
    if (t.status === 'open') {
      const free = t.seats.filter((s) => s.kind === 'empty').length;
      if (me === null) return free ? `Waiting for players: ${free} free seat${free > 1 ? 's' : ''}.` : 'Waiting for the match to start.';
      if (free === 0) return 'All seats are taken: start when ready.';
      return t.bots ? `Waiting for players, or start now and bots take the ${free} free seat${free > 1 ? 's' : ''}.` : `Waiting for ${free} more player${free > 1 ? 's' : ''}.`;
    }
    if (t.status === 'finished') {
      const w = (t.winners || v?.winners || []).map((s) => (s === me ? 'you' : seatName(s)));
      return w.length ? `Match over: ${w.join(' and ')} won.` : 'Match over.';
    }
    if (t.status === 'abandoned') return 'This table was abandoned.';
    if (me !== null && t.to_act.includes(me)) return `Round ${t.round}: your turn.`;
    if (t.to_act.length) return `Round ${t.round}: waiting for ${t.to_act.map(seatName).join(', ')}.`;
    return `Round ${t.round}.`;
  }

  // A reconnect names the version it holds: the server then sends one patch from it
  // instead of the whole state, when it can.
  const path = () => {
    const q = new URLSearchParams();
    if (invite) q.set('invite', invite);
    if (latest && !resyncing) q.set('since', String(latest.version));
    const qs = q.toString();
    return `/ws/table/${encodeURIComponent(id)}${qs ? `?${qs}` : ''}`;
  };
  // Drawn at once from the state fetched over HTTP (the game when its module is in); the
  // socket brings it up to date.
  render();
  modReady.then((m) => {
    // In a task of its own: the frame is painted first, and a slow phone is not blocked
    // for the whole of both.
    setTimeout(() => {
      if (stale(visit)) return;
      mod = m;
      render();
    }, 0);
  });
  const [{ LiveSocket }, , { applyPatch, patchFrom }, sound] = await modules;
  if (stale(visit)) return;
  sock = new LiveSocket(path, {
    ping: true,
    onStatus: (s, d) => {
      showConn(s, d);
      if (s === 'open') {
        failures = 0;
        justOpened = true;
        if (everConnected) newVersionCheck();
      }
      // A socket that keeps failing may face a table that is gone (a finished table leaves
      // the server's memory): ask over HTTP, which can say so, and stop retrying then.
      if (s === 'waiting' && ++failures % 3 === 0) {
        api.table(id, invite).catch((e) => {
          if (e instanceof ApiError && (e.status === 404 || e.status === 403)) {
            sock.close();
            showConn('idle');
            mount(app, h('section', { class: 'panel' },
              h('h1', null, 'This table is gone'),
              h('p', { testid: 'page-error' }, e.message),
              h('a', { href: '#/', class: 'btn' }, 'Back to the lobby')));
          }
        });
      }
      const now = s === 'open';
      // A page opened (or reconnected) in the background says so at once.
      if (now && document.visibilityState === 'hidden') sock.send({ type: 'presence', away: true });
      // Moves need a live socket: while it is down, the page says so and the hand rests.
      if (now !== connected || (!now && busy)) {
        if (!now && busy) {
          // The move left, the answer did not come: it may or may not have arrived.
          inDoubt = sentOn;
          clearTimeout(busyTimer);
          toast('Connection lost while your move was on its way: reconnecting to see whether it arrived…');
        }
        connected = now;
        everConnected ||= now;
        busy = false;
        render();
      }
    },
    onMessage: (m) => {
      if (chat.onMessage(m)) return;
      if (m.type === 'state') {
        // The whole truth: replace. Ignore a late older one (after a reconnect, an unchanged
        // table says that a move in doubt never arrived).
        if (latest && !resyncing && !newer(m) && m.table.id === latest.table.id) {
          settleDoubt();
          return;
        }
        justOpened = false;
        latest = m;
        everSynced = true;
        receivedAt = performance.now();
        resyncing = false;
        settleDoubt();
        window.fibUpdates = window.fibUpdates || { state: 0, patch: 0 };
        window.fibUpdates.state += 1;
        busy = false;
        clearTimeout(busyTimer);
        render();
        onUpdate();
      } else if (m.type === 'patch') {
        justOpened = false;
        // A change against the document we hold; anything that does not fit (a missed
        // message) is repaired by asking for the whole state.
        const resync = () => {
          // One `sync` until its state arrives; patches until then are dropped.
          if (!resyncing) sock.send({ type: 'sync' });
          resyncing = true;
        };
        if (resyncing) return;
        if (!latest || patchFrom(m) !== latest.version) {
          resync();
          return;
        }
        // A game may say what a patch did that no event says (Trump: the cards played).
        const before = mod?.mark?.(latest.view);
        try {
          applyPatch(latest, m.ops);
        } catch (e) {
          console.warn('patch did not apply, resyncing', e);
          resync();
          return;
        }
        latest.version = m.version;
        settleDoubt();
        latest.events = [...(mod?.implied?.(before, latest.view) ?? []), ...(m.events ?? [])];
        everSynced = true;
        receivedAt = performance.now();
        window.fibUpdates = window.fibUpdates || { state: 0, patch: 0 };
        window.fibUpdates.patch += 1;
        busy = false;
        clearTimeout(busyTimer);
        render();
        onUpdate();
      } else if (m.type === 'error') {
        busy = false;
        clearTimeout(busyTimer);
        // A game may say it in the player's words (e.g. which colour must be followed).
        refusal = mod?.explainError?.(m, latest?.view) ?? REFUSALS[m.code] ?? m.message ?? m.code;
        refusalAt = latest?.version ?? 0;
        refusalCode = m.code ?? '';
        toast(refusal);
        render();
      }
    },
  });
  const stopVisibility = reportVisibility((msg) => sock.send(msg));
  const ticker = setInterval(() => tickClocks(root, receivedAt, (text) => { announcer.textContent = text; }), 250);
  // A game may lay itself out by the breakpoint (the rummy games' order of parts on a
  // phone): drawn again when it is crossed, not only at the next change of the table.
  const stopLayout = onLayoutChange(() => render());
  session.cleanup = () => {
    document.title = 'Fibonacci Cards';
    clearTimeout(busyTimer);
    clearInterval(ticker);
    stopVisibility();
    stopLayout();
    sock.close();
  };
}

// Open state of the fairness <details>, kept across re-renders.
let fairnessOpen = false;

function fairnessPanel(id, rounds, current) {
  const d = h('details', { class: 'panel fairness', testid: 'fairness', open: fairnessOpen || null },
    h('summary', null, 'Fairness record'),
    h('p', { class: 'muted small' },
      'Before each round the server publishes the SHA-256 of the shuffle seed; when the round ends it reveals the seed, so anyone can check the deal.'),
    rounds.length === 0 ? h('p', { class: 'muted' }, 'No round yet.') : h('div', { class: 'table-wrap' },
      h('table', { class: 'grid mono' },
        h('thead', null, h('tr', null, h('th', null, 'Round'), h('th', null, 'Seed SHA-256'), h('th', null, 'Seed'), h('th', null, ''))),
        h('tbody', null, [...rounds].reverse().map((r) =>
          h('tr', { class: r.round === current ? 'current' : '' },
            h('td', null, String(r.round)),
            h('td', { class: 'hash' }, r.seed_sha256),
            h('td', { class: 'hash' }, r.seed ?? (r.round === current ? 'revealed when the round ends' : '—')),
            h('td', null, r.seed ? h('a', { href: dealUrl(id, r.round), target: '_blank', rel: 'noopener' }, 'deal') : null)))))),
    // The state holds the latest two rounds' records; every round's is one request away.
    current > 2 ? h('p', { class: 'muted small' }, h('a', { href: roundsUrl(id), target: '_blank', rel: 'noopener', testid: 'all-rounds' }, 'Every round\'s record')) : null);
  d.addEventListener('toggle', () => (fairnessOpen = d.open));
  return d;
}

// ---------------------------------------------------------------------------------------
// My matches, leaderboard, rules
// ---------------------------------------------------------------------------------------

const when = (ms) => new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

async function matchesPage(visit) {
  mount(app, h('p', { class: 'muted' }, 'Loading your matches…'));
  const rows = await api.myMatches();
  if (stale(visit)) return;
  const unfinished = (r) => r.status === 'open' || r.status === 'playing';
  mount(app, h('section', { class: 'panel' },
    h('h1', null, 'My matches'),
    rows.length === 0 ? h('p', { class: 'muted' }, 'No matches yet. Join a table in the lobby.') : h('div', { class: 'table-wrap' },
      h('table', { class: 'grid', testid: 'matches' },
        h('thead', null, h('tr', null, h('th', null, 'Game'), h('th', null, 'Status'), h('th', { class: 'num' }, 'Seat'),
          h('th', { class: 'num' }, 'Score'), h('th', null, 'Result'), h('th', null, 'Opponents'), h('th', { class: 'hide-narrow' }, 'Last activity'), h('th', null, ''))),
        h('tbody', null, rows.map((r) =>
          h('tr', { testid: 'match-row', dataset: { tableId: r.table_id, status: r.status } },
            h('td', null, gameTitle(r.game)),
            h('td', null, h('span', { class: `pill pill-${r.status}` }, r.status)),
            h('td', { class: 'num' }, String(r.seat + 1)),
            h('td', { class: 'num' }, String(r.score)),
            h('td', null, r.won === true ? 'won' : r.won === false ? 'lost' : '—'),
            h('td', { class: 'small', testid: 'match-opponents' }, opponentsOf(r)),
            h('td', { class: 'small hide-narrow' }, when(r.updated_at)),
            // A live table resumes; a finished one opens as a step replay.
            h('td', null, unfinished(r)
              ? h('a', { class: 'btn small primary', href: `#/table/${r.table_id}`, testid: 'match-resume' }, 'Resume')
              : r.status === 'finished'
                ? h('a', { class: 'btn small', href: `#/replay/${r.table_id}`, testid: 'match-replay' }, 'Replay')
                : null))))))));
}

// The daily Solitaire deal (R-25): one seed a day per target, the same for everybody; one
// game each; the board ranks finished games by fewest discards, then lost ones. The seed
// is published once the day (UTC) is over.
async function dailyPage(visit, target, day) {
  mount(app, h('p', { class: 'muted' }, 'Loading the daily deal…'));
  const board = await api.dailyBoard(target, day);
  if (stale(visit)) return;
  const today = !day;
  const tabs = [21, 13, 8].map((t) =>
    h('a', { href: `#/daily/${t}${day ? `/${day}` : ''}`, class: `tab ${t === target ? 'active' : ''}`, testid: `daily-tab-${t}` },
      `Solitaire ${t}`));
  const err = h('p', { class: 'form-error', role: 'alert' });
  // Starting is idempotent on the server: a player who already has today's game gets it back.
  const play = h('button', { class: 'btn primary', type: 'button', testid: 'daily-play' },
    board.results.some((r) => r.player.id === session.me?.id) ? 'See my game' : "Play (or resume) today's deal");
  play.addEventListener('click', async () => {
    err.textContent = '';
    try {
      const t = await api.dailyStart(target);
      location.hash = `#/table/${t.id}`;
    } catch (ex) {
      err.textContent = ex.message;
    }
  });
  const rows = board.results.map((r, i) =>
    h('tr', { class: r.player.id === session.me?.id ? 'me' : '', testid: 'daily-row' },
      h('td', { class: 'num' }, r.finished ? String(i + 1) : '—'),
      h('td', null, r.player.name),
      h('td', { class: 'num' }, r.finished ? String(r.discards) : 'lost')));
  mount(app, h('section', { class: 'panel', testid: 'daily' },
    h('h1', null, `Daily Solitaire ${target}: ${board.day}`),
    h('div', { class: 'tabs' }, tabs),
    h('p', null, 'Everybody plays the same deal today, once. Close every required set with as few cards in the discard pile as you can: fewer is better; running out of stock loses.'),
    today ? h('p', null, play) : null,
    err,
    rows.length === 0
      ? h('p', { class: 'muted' }, 'No finished games yet today.')
      : h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'daily-board' },
        h('thead', null, h('tr', null, h('th', { class: 'num' }, '#'), h('th', null, 'Player'), h('th', { class: 'num' }, 'Discards'))),
        h('tbody', null, rows))),
    h('p', { class: 'muted small wrap-anywhere', testid: 'daily-fairness' },
      `Seed SHA-256: ${board.seed_sha256}`,
      board.seed ? ` · seed: ${board.seed}` : ' · the seed is published when the day (UTC) is over.')));
}

// A game's leaderboard in one rating pool (docs/ratings.md): duels (Glicko-2) or matches
// of three or more people (Weng-Lin), ranked by the conservative rating.
async function leaderboardPage(visit, game, pool) {
  mount(app, h('p', { class: 'muted' }, 'Loading the leaderboard…'));
  const board = await api.leaderboard(game, pool);
  if (stale(visit)) return;
  const rows = board.rows;
  const tabs = (session.games.length ? session.games : [{ kind: 'trump' }]).map((g) =>
    h('a', { href: `#/leaderboard/${g.kind}/${pool}`, class: `tab ${g.kind === game ? 'active' : ''}` }, gameTitle(g.kind)));
  const pools = [['duel', 'Duels'], ['multi', '3–5 players']].map(([p, title]) =>
    h('a', { href: `#/leaderboard/${game}/${p}`, class: `tab ${p === pool ? 'active' : ''}`, testid: `pool-${p}` }, title));
  const fmt = (x) => (board.system === 'glicko2' ? x.toFixed(0) : x.toFixed(2));
  mount(app, h('section', { class: 'panel' },
    h('h1', null, `Leaderboard: ${gameTitle(game)}`),
    h('div', { class: 'tabs' }, tabs),
    h('div', { class: 'tabs' }, pools),
    rows.length === 0 ? h('p', { class: 'muted' }, `Nobody has ${board.min_matches} rated matches here yet.`) : h('div', { class: 'table-wrap' },
      h('table', { class: 'grid', testid: 'leaderboard' },
        h('thead', null, h('tr', null, h('th', { class: 'num' }, '#'), h('th', null, 'Player'), h('th', { class: 'num' }, 'Matches'),
          h('th', { class: 'num' }, 'Wins'),
          h('th', { class: 'num', title: 'rating ± deviation' }, 'Rating'),
          h('th', { class: 'num', title: 'rating − 3 × deviation: what the board ranks by' }, 'Ranked by'))),
        h('tbody', null, rows.map((r) =>
          h('tr', { class: r.player.id === session.me?.id ? 'me' : '', testid: 'leader-row' },
            h('td', { class: 'num' }, String(r.rank)),
            h('td', null, h('a', { href: `#/players/${r.player.id}/${encodeURIComponent(r.player.name)}`, testid: 'leader-profile' }, r.player.name)),
            h('td', { class: 'num' }, String(r.matches)),
            h('td', { class: 'num' }, String(r.wins)),
            h('td', { class: 'num', testid: 'leader-rating' }, `${fmt(r.rating)} ± ${fmt(r.deviation)}`),
            h('td', { class: 'num' }, fmt(r.conservative)))))))));
}

// A rules page's text, asked for at start-up (with the session) when the page opens on it.
let rulesEarly = null;
function rulesText(kind) {
  if (rulesEarly?.kind === kind) {
    const { promise } = rulesEarly;
    rulesEarly = null;
    return promise;
  }
  return fetch(`/rules/${kind}.html`, { credentials: 'same-origin' }).then((res) => (res.ok ? res.text() : null));
}

async function rulesPage(visit, kind) {
  // One tab per game of GET /api/games; a game may have several pages
  // (e.g. rummy: one per target, its one-player form Solitaire, and an overview)
  // (`rulesPagesOf` in games/registry.js). No game module is loaded for this page.
  const pages = (session.games.length ? session.games : [{ kind: 'trump' }])
    .flatMap((g) => rulesPagesOf[g.kind] ?? [{ page: g.kind, title: gameTitle(g.kind) }]);
  const tabs = pages.map((p) =>
    h('a', { href: `#/rules/${p.page}`, class: `tab ${p.page === kind ? 'active' : ''}`, testid: `rules-tab-${p.page}` }, p.title));
  const pageTitle = pages.find((p) => p.page === kind)?.title ?? gameTitle(kind);
  const body = h('article', { class: 'rules', testid: 'rules' }, h('p', { class: 'muted' }, 'Loading…'));
  mount(app, h('section', { class: 'panel' }, h('h1', null, `How to play: ${pageTitle}`), h('div', { class: 'tabs' }, tabs), body));
  let html = null;
  if (/^[a-z0-9_-]+$/.test(kind)) {
    try {
      const text = await rulesText(kind);
      if (stale(visit)) return;
      // The server answers unknown paths with index.html: that is not a rules fragment.
      if (text && !/<html|<!doctype/i.test(text.slice(0, 500))) html = text;
    } catch {
      html = null;
    }
  }
  if (html === null) {
    mount(body, h('p', null, `There is no rules page for ${pageTitle} yet.`));
    return;
  }
  // Trusted: the fragments are files of this project, served from web/rules/.
  body.innerHTML = html;
  // A table wider than a phone scrolls inside itself: the keyboard must reach it too.
  for (const t of body.querySelectorAll('table')) t.tabIndex = 0;
}

// ---------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------

// A table page's state, asked for at start-up (with the session) when the page opens on a
// table: one round trip fewer before the table is drawn. Taken once, by that table's page.
let earlyState = null;
function takeEarlyState(id) {
  if (earlyState?.id !== id) return null;
  const p = earlyState.promise;
  earlyState = null;
  return p;
}

/**
 * A JSON data block the server wrote into the page (`<script type="application/json">`:
 * the game catalogue, and on a table's own address its state and the session), parsed and
 * taken out of the page, so that a later visit cannot mistake it for fresh; null if none.
 */
function inPage(id) {
  const block = document.getElementById(id);
  if (!block) return null;
  block.remove();
  try {
    return JSON.parse(block.textContent);
  } catch {
    return null;
  }
}

async function boot() {
  const [page, a, b] = parseRoute();
  // Every page waits for the session: the page's first script asked for it (and for a
  // table's state) before the modules arrived; asked for here only without that script.
  const inPageSession = inPage('fib-session');
  const mine = (inPageSession ? Promise.resolve(inPageSession) : null)
    ?? early('session') ?? api.session();
  mine.catch(() => {}); // awaited below
  if (page === 'table' && a) {
    const invite = b || localStorage.getItem(inviteKey(a)) || null;
    // A table's own address carries the viewer's first state in the page (the server put
    // it there: crates/server/src/http.rs `table_page`); otherwise the page's first script
    // asked for it; otherwise it is asked for now.
    const state = inPage('fib-state');
    const asked = earlyTable();
    const promise = (state?.table?.id === a ? Promise.resolve(state) : null)
      ?? (asked?.id === a && asked.invite === invite ? early('state') : null)
      ?? api.tableState(a, invite);
    promise.catch(() => {}); // handled by the table page, which awaits it
    earlyState = { id: a, promise };
    tableModules().catch(() => {}); // the table page imports them again (the same modules)
    // The game's module as soon as the state names the game (before the session is in).
    promise.then((st) => gameModule(st.table.game)).catch(() => {});
  }
  if (page === 'rules' && /^[a-z0-9_-]+$/.test(a || 'trump')) {
    const promise = rulesText(a || 'trump');
    promise.catch(() => {}); // handled by the rules page
    rulesEarly = { kind: a || 'trump', promise };
  }
  // Both start-up questions at once; /api/session answers 200 with `null` when nobody has
  // signed in, so a first visit logs no error.
  // The catalogue comes with the page (a JSON block the server writes); asked for only
  // when it is missing.
  const inline = inPage('fib-games');
  const catalogue = inline ? Promise.resolve(inline) : api.games();
  const [games, me] = await Promise.allSettled([catalogue, mine]);
  session.games = games.status === 'fulfilled' ? games.value : [];
  session.me = me.status === 'fulfilled' ? me.value.player : null;
  // Asked for before anyone signed in: it would be a stranger's view of the table.
  if (!session.me) earlyState = null;
  if (me.status === 'rejected') toast(me.reason.message);
  showMe();
  window.addEventListener('hashchange', route);
  route();
  // A tournament this browser plays in: its next game opens by itself (tournaments.js).
  if (localStorage.getItem('fib.tournaments')) import('./tournaments.js').then((t) => t.resume(session.me?.id), () => {});
}

boot();
