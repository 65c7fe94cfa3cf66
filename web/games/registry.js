// The registry of game modules. Each game kind has a module `web/games/<kind>.js` that
// exports `render(root, msg, ctx)`; a kind without one gets the generic fallback, so any
// game the server offers is at least playable. To add a game, add one line below.
//
// render(root, msg, ctx) fills `root` from the latest `state` message only (never from
// earlier ones: the server's state is the whole truth). ctx gives:
//   ctx.act(action) -> bool   send one of msg.legal (false if not connected / busy)
//   ctx.busy                  an action was sent and its answer has not arrived yet
//   ctx.seatName(i)           display name of seat i ("Bot 3" for bots)
//   ctx.mySeat                the viewer's seat, or null for a spectator
//   ctx.tableId
// A module may also export `title` (used when /api/games is unavailable).

const modules = {
  // cards.js alongside: trump.js imports it, and asking at once saves a round trip.
  trump: () => Promise.all([import('./trump.js'), import('../cards.js')]).then(([m]) => m),
  rummy: () => import('./rummy.js'),
  fibfib: () => import('./fibfib.js'),
  nachos: () => import('./nachos.js'),
};

// The Rules page's tabs per game kind, when a game has more than one page (the rummy family:
// one page per target, Solitaire, then the overview). Kept here rather than in the game
// modules, so the Rules page shows its text without loading any game module.
export const rulesPagesOf = {
  rummy: [
    { page: 'fib21', title: 'Fibonacci 21' },
    { page: 'fib13', title: 'Fibonacci 13' },
    { page: 'fib8', title: 'Fibonacci 8' },
    { page: 'solitaire', title: 'Solitaire Fibonacci' },
    { page: 'rummy', title: 'Family overview' },
  ],
};

const loaded = new Map();

/** The module for `kind`, or the generic one. Never throws. */
export async function gameModule(kind) {
  if (loaded.has(kind)) return loaded.get(kind);
  let mod = null;
  try {
    if (modules[kind]) mod = await modules[kind]();
  } catch (e) {
    console.error(`game module ${kind} failed to load`, e);
  }
  if (!mod || typeof mod.render !== 'function') mod = await import('./generic.js');
  loaded.set(kind, mod);
  return mod;
}
