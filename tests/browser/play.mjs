// Browser test of the web client: two players in two separate Chromium contexts sign in,
// A creates a public 4-seat Fibonacci's Trump table with bots, B joins it from the lobby,
// A starts, and both play cards through the UI until the first round ends. Screenshots go
// to tests/browser/test-results/. Usage: node tests/browser/play.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('two players play a Trump round', async ({ player, tid, log, outDir, deadline }) => {
  // A on a laptop-sized window, B at phone width: both layouts get played through.
  const a = await player('Ada');
  const b = await player('Bob ★', { phone: true });
  const pages = { A: a, B: b };
  // The cookie keeps the player across a reload: no name form the second time.
  await a.reload();
  await a.locator(tid('me-name')).filter({ hasText: 'Ada' }).waitFor();
  await a.locator(tid('create-form')).waitFor();
  if (await a.locator(tid('name-input')).count()) throw new Error('a reload forgot the player');

  // A creates a public table for 4 with bots.
  await a.locator(tid('create-game')).selectOption('trump');
  await a.locator(tid('create-seats')).selectOption('4');
  await a.locator(tid('create-bots')).check();
  await a.locator(tid('create-private')).uncheck();
  await a.locator(tid('create-submit')).click();
  await a.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  const tableId = a.url().match(/#\/table\/([0-9a-f-]{36})/)[1];
  await a.locator(tid('table-page')).waitFor();
  log(`A created table ${tableId}`);

  // B sees it in the live lobby and joins from there.
  const row = b.locator(`${tid('table-row')}[data-table-id="${tableId}"]`);
  await row.waitFor();
  await row.locator(tid('table-join')).click();
  await b.waitForURL(new RegExp(`#/table/${tableId}`));
  await b.locator(tid('seat-row-1')).filter({ hasText: 'Bob' }).waitFor();
  log('B joined seat 2');

  // A sees B seated (live), then starts; the bots take the two empty seats.
  await a.locator(tid('seat-row-1')).filter({ hasText: 'Bob' }).waitFor();
  const start = a.locator(tid('start-button'));
  await start.waitFor();
  if (await start.isDisabled()) throw new Error('the start button is disabled although the table has bots');
  await start.click();
  await a.locator(tid('hand')).waitFor();
  await b.locator(tid('hand')).waitFor();
  log('match started, both hands shown');

  // Play: whoever has a playable card clicks one, until round 1 ends.
  const played = { A: 0, B: 0 };
  const roundOver = async (p) =>
    (await p.locator(tid('round-result')).count()) > 0 ||
    Number((await p.locator(tid('round-no')).textContent().catch(() => '1')) || 1) >= 2;
  for (;;) {
    if (Date.now() > deadline) {
      throw new Error(`round 1 did not end in time (cards played: A ${played.A}, B ${played.B})`);
    }
    if ((await roundOver(a)) && (await roundOver(b))) break;
    let clicked = false;
    for (const who of ['A', 'B']) {
      const p = pages[who];
      const cards = p.locator(`${tid('hand-card')}[data-playable="true"]`);
      const n = await cards.count();
      if (n === 0) continue;
      // Any playable card; the page re-renders on every state, so a click may miss.
      const pick = cards.nth(Math.floor(Math.random() * n));
      const label = await pick.getAttribute('title', { timeout: 1000 }).catch(() => null);
      try {
        await pick.click({ timeout: 2000 });
        played[who] += 1;
        clicked = true;
        log(`${who} played ${label}`);
      } catch {
        // The card went away (state changed under us): look again.
      }
    }
    if (!clicked) await a.waitForTimeout(150);
  }
  if (played.A === 0 || played.B === 0) throw new Error(`a human never played (A ${played.A}, B ${played.B})`);
  log(`round 1 over: A played ${played.A}, B played ${played.B}`);

  // The table was rendered from patches after the first full state (the server sends a
  // whole state only on connect and resync).
  for (const [who, p] of [['A', a], ['B', b]]) {
    const u = await p.evaluate(() => window.fibUpdates);
    if (!u || u.patch < played.A + played.B) throw new Error(`${who}: not rendered from patches: ${JSON.stringify(u)}`);
    log(`${who} rendered ${u.state} full state(s) and ${u.patch} patches`);
  }

  // The round result and scores are shown; a trick area exists; the status line says something.
  for (const [who, p] of Object.entries(pages)) {
    await p.locator(tid('scores')).waitFor();
    await p.locator(tid('trick')).waitFor();
    const status = (await p.locator(tid('status-line')).textContent())?.trim();
    if (!status) throw new Error(`${who}: empty status line`);
  }
  await a.screenshot({ path: join(outDir, 'player-a-1280.png'), fullPage: true });
  await b.screenshot({ path: join(outDir, 'player-b-390.png'), fullPage: true });
  log(`screenshots in ${outDir}`);
});
