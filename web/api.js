// HTTP API client. The player's token lives in the HttpOnly `fib_token` cookie set by
// POST /api/guest, so requests only need `credentials: 'same-origin'`; the page never
// sees the token. Failures throw ApiError carrying the server's {code, message}.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function call(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  return answer(fetch(path, init));
}

/** The answer of a request (a `fetch` promise): its JSON, or an ApiError. */
async function answer(request) {
  let res;
  try {
    res = await request;
  } catch (e) {
    throw new ApiError(0, 'network', 'Cannot reach the server. Check your connection and try again.');
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const code = data?.code ?? `http_${res.status}`;
    const message = data?.message ?? `The server answered ${res.status} ${res.statusText}.`;
    throw new ApiError(res.status, code, message);
  }
  return data;
}

/**
 * An answer to what the page's first script asked for before any module arrived
 * (`window.fibEarly`, written by the server: crates/server/src/assets.rs): `session`, or
 * `state` of `fibEarly.table`. Taken once; null when there is none.
 */
export function early(name) {
  const e = window.fibEarly;
  const request = e?.[name];
  if (!request) return null;
  delete e[name];
  return answer(request);
}

/** The table (`{ id, invite }`) whose state the page's first script asked for, if any. */
export const earlyTable = () => window.fibEarly?.table ?? null;

const enc = encodeURIComponent;

export const api = {
  guest: (name) => call('POST', '/api/guest', { name }),
  me: () => call('GET', '/api/me'),
  account: () => call('GET', '/api/account'),
  claim: (username, password) => call('POST', '/api/account/claim', { username, password }),
  signIn: (username, password) => call('POST', '/api/account/signin', { username, password }),
  signOut: () => call('POST', '/api/account/signout'),
  devices: () => call('GET', '/api/account/devices'),
  revokeDevice: (id) => call('DELETE', `/api/account/devices/${enc(id)}`),
  // Bot accounts (docs/protocol.md §2.26): for good; then API tokens, each shown once.
  makeBot: () => call('POST', '/api/account/bot'),
  botToken: () => call('POST', '/api/account/bot/token'),
  revokeBotToken: (id) => call('DELETE', `/api/account/bot/token/${enc(id)}`),
  player: (id) => call('GET', `/api/players/${enc(id)}`),
  playerMatches: (id) => call('GET', `/api/players/${enc(id)}/matches?limit=20`),
  session: () => call('GET', '/api/session'),
  myMatches: () => call('GET', '/api/me/matches'),
  games: () => call('GET', '/api/games'),
  tables: () => call('GET', '/api/tables'),
  createTable: (req) => call('POST', '/api/tables', req),
  table: (id, invite) => call('GET', `/api/tables/${enc(id)}${invite ? `?invite=${enc(invite)}` : ''}`),
  // The viewer's whole state, as the table socket would send it first (docs/protocol.md).
  tableState: (id, invite) => call('GET', `/api/tables/${enc(id)}/state${invite ? `?invite=${enc(invite)}` : ''}`),
  join: (id, seat, invite) =>
    call('POST', `/api/tables/${enc(id)}/join`, { seat: seat ?? null, invite_code: invite || null }),
  leave: (id) => call('POST', `/api/tables/${enc(id)}/leave`),
  start: (id) => call('POST', `/api/tables/${enc(id)}/start`),
  seatBot: (id, seat, level) => call('POST', `/api/tables/${enc(id)}/bots`, { seat, level }),
  rounds: (id) => call('GET', `/api/tables/${enc(id)}/rounds`),
  replay: (id) => call('GET', `/api/tables/${enc(id)}/replay`),
  analysis: (id) => call('GET', `/api/tables/${enc(id)}/analysis`),
  requestAnalysis: (id) => call('POST', `/api/tables/${enc(id)}/analysis`),
  playerRatings: (id) => call('GET', `/api/players/${enc(id)}/ratings`),
  ratingHistory: (id, game, pool) =>
    call('GET', `/api/players/${enc(id)}/rating-history?game=${enc(game)}&pool=${enc(pool)}`),
  leaderboard: (game, pool) => call('GET', `/api/leaderboard/${enc(game)}?pool=${enc(pool || 'duel')}`),
  tournaments: () => call('GET', '/api/tournaments'),
  tournament: (id, invite) => call('GET', `/api/tournaments/${enc(id)}${invite ? `?invite=${enc(invite)}` : ''}`),
  createTournament: (req) => call('POST', '/api/tournaments', req),
  joinTournament: (id, invite) => call('POST', `/api/tournaments/${enc(id)}/join`, { invite: invite || null }),
  withdrawTournament: (id) => call('POST', `/api/tournaments/${enc(id)}/withdraw`),
  cancelTournament: (id) => call('POST', `/api/tournaments/${enc(id)}/cancel`),
  dailyStart: (target) => call('POST', '/api/daily/solitaire', { target }),
  dailyBoard: (target, day) =>
    call('GET', `/api/daily/solitaire?target=${enc(target)}${day ? `&day=${enc(day)}` : ''}`),
};

/** The URL of an ended round's deal record (R-0), for the fairness panel. */
export const dealUrl = (id, round) => `/api/tables/${enc(id)}/rounds/${round}/deal`;

/** The URL of every round's fairness record (the state holds the latest two). */
export const roundsUrl = (id) => `/api/tables/${enc(id)}/rounds`;
