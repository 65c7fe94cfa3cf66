// A link that dies without closing (a walk cut one with iptables: the page said
// "Connected" for minutes, and a move made meanwhile vanished without a word). Here the
// test stands between the page and the server (Playwright's WebSocket routing) and stops
// passing messages either way without closing anything:
// - the page finds the dead link by itself (a ping without an answer) and reconnects;
// - a move made into the dead link is reported: first that the connection was lost while
//   it was on its way, then, once reconnected, that it did not reach the server;
// - a stale move is refused in words, not with version numbers;
// - after a reconnection, a server whose client files changed (another `fib-client` mark
//   in its page) is noticed, and a reload offered; the same version offers none;
// - a Trump match against a bot abandoned while the page was away (the server waits 20 s
//   for that) shows nobody's turn when the page is back.
// Usage: node tests/browser/dead_link.mjs <base-url>

import { runBrowserTest } from './lib.mjs';

await runBrowserTest('a dead link and the move made into it', async ({ player, tid, log }) => {
  const p = await player('Dee');
  if (process.env.DEBUG_LINK) p.on('console', (m) => console.log('page:', m.text()));
  // Every table socket goes through the test; `dead` stops the passing of messages.
  let dead = false;
  let offline = false;
  let sockets = 0;
  let server = null;
  let page = null;
  let lastAct = null;
  // The server's page as a new client version would make it (another version mark).
  let newBuild = false;
  await p.route((url) => url.pathname === '/', async (route) => {
    const res = await route.fetch();
    const body = await res.text();
    await route.fulfill({ response: res, body: newBuild ? body.replace(/name="fib-client" content="[0-9a-f]+"/, 'name="fib-client" content="000000000000"') : body });
  });
  await p.routeWebSocket(/\/ws\/table\//, (ws) => {
    sockets += 1;
    // Off the network: no connection reaches the server, the page's is closed.
    if (offline) {
      ws.close();
      return;
    }
    const to = ws.connectToServer();
    server = to;
    page = ws;
    ws.onMessage((m) => {
      if (dead) return;
      if (typeof m === 'string' && m.includes('"act"')) lastAct = JSON.parse(m);
      to.send(m);
    });
    to.onMessage((m) => { if (process.env.DEBUG_LINK && !dead) console.log(`#${sockets} <- ${String(m).slice(0, 160)}`); if (!dead) ws.send(m); });
  });
  const toasts = () => p.locator(tid('toast')).allTextContents();
  const until = async (what, f, ms) => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; toasts: ${JSON.stringify(await toasts())}`);
      await p.waitForTimeout(200);
    }
  };

  // Solitaire: the first move is the player's (draw 2 from the stock).
  await p.locator(tid('create-game')).selectOption('rummy');
  await p.locator(tid('create-seats')).selectOption('1');
  await p.locator(tid('create-target')).selectOption('8');
  await p.locator(tid('create-submit')).click();
  await p.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  await p.locator(tid('start-button')).click();
  await p.locator(tid('act-draw-stock')).waitFor();
  await until('the socket', async () => (await p.locator(tid('conn-status')).getAttribute('data-state')) === 'open', 10_000);
  const hand = await p.locator(tid('hand-card')).count();
  const first = sockets;

  // The link dies; the draw goes into it.
  dead = true;
  await p.locator(tid('act-draw-stock')).click();
  const started = Date.now();
  await until('the lost connection said', async () => (await toasts()).some((t) => /Connection lost while your move was on its way/.test(t)), 20_000);
  log(`the dead link found after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  dead = false;
  await until('a new socket', async () => sockets > first, 20_000);
  await until('the move reported lost', async () => (await toasts()).some((t) => /did not reach the server: play it again/.test(t)), 20_000);
  if (await p.locator(tid('hand-card')).count() !== hand) throw new Error('the hand changed, though the draw never reached the server');
  log('the move reported as not received; the hand as it was');

  // Played again, it goes through.
  await p.locator(tid('act-draw-stock')).click();
  await until('the draw', async () => (await p.locator(tid('hand-card')).count()) === hand + 2, 10_000);
  log('played again, it arrived');

  // A stale move is refused in words: the draw sent again against the version it was made
  // at, as a second tab would.
  server.send(JSON.stringify(lastAct));
  await until('the stale move refused in words', async () => (await toasts()).some((t) => /The table changed before your move arrived/.test(t)), 10_000);
  if ((await toasts()).some((t) => /version \d+/.test(t))) throw new Error(`a refusal names versions: ${JSON.stringify(await toasts())}`);
  log('a stale move is refused in words');

  // The earlier reconnection found the same version: nothing offered.
  if (await p.locator(tid('new-version')).count()) throw new Error('a reload offered for the same version');
  // A new version: the socket is lost and comes back to a server with other files.
  newBuild = true;
  const before = sockets;
  page.close();
  await until('a new socket', async () => sockets > before, 20_000);
  await p.locator(tid('new-version-reload')).waitFor({ timeout: 10_000 });
  log('a new client version offers a reload');

  // Away from a Trump match for longer than it waits: abandoned meanwhile, then nobody's
  // turn is shown.
  newBuild = false;
  await p.goto(p.url().replace(/#.*$/, '#/'));
  await p.locator(tid('create-game')).selectOption('trump');
  await p.locator(tid('create-seats')).selectOption('2');
  await p.locator(tid('create-submit')).click();
  await p.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  await p.locator(tid('start-button')).click();
  await p.locator(tid('hand')).waitFor();
  await until('a turn shown', async () => (await p.locator('.turn-tag').count()) > 0, 10_000);
  offline = true;
  page.close();
  const away = Date.now();
  const tableId = p.url().match(/table\/([0-9a-f-]{36})/)[1];
  await until('the game abandoned', async () => (await p.evaluate(async (t) => (await (await fetch(`/api/tables/${t}`)).json()).status, tableId)) === 'abandoned', 40_000);
  offline = false;
  await until('the page back', async () => /abandoned/i.test(await p.locator(tid('table-page')).textContent()), 30_000);
  const turn = await p.evaluate(() => ({
    tags: [...document.querySelectorAll('.turn-tag')].map((e) => e.textContent),
    status: document.querySelector('.status-line')?.textContent ?? '',
  }));
  if (turn.tags.length || /your turn/i.test(turn.status)) throw new Error(`an abandoned game shows a turn: ${JSON.stringify(turn)}`);
  log(`abandoned after ${((Date.now() - away) / 1000).toFixed(0)} s away; no turn shown ("${turn.status.trim()}")`);
});
