// Browser test of the daily Solitaire page: a player opens today's deal for Solitaire 8,
// starts it (a table page with a hand), and back on the daily page gets the same game
// again rather than a second one. Usage: node tests/browser/daily.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('daily Solitaire: start and resume', async ({ player, tid, log, outDir }) => {
  const p = await player('Dana');
  await p.locator('nav a[data-page="daily"]').click();
  await p.locator(tid('daily')).waitFor();
  await p.locator(tid('daily-tab-8')).click();
  await p.waitForURL(/#\/daily\/8$/);
  const fairness = (await p.locator(tid('daily-fairness')).textContent()) ?? '';
  if (!/[0-9a-f]{64}/.test(fairness)) throw new Error(`no seed commitment shown: ${fairness}`);
  await p.locator(tid('daily-play')).click();
  await p.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  const table = p.url();
  await p.locator(tid('table-page')).waitFor();
  await p.locator(tid('hand')).waitFor();
  log('daily game started');
  await p.screenshot({ path: join(outDir, 'daily-table.png'), fullPage: true });
  await p.goto(p.url().replace(/#.*$/, '#/daily/8'));
  await p.locator(tid('daily-play')).click();
  await p.waitForURL(table);
  log('the same game again');
  // Leaving a table page before it has loaded: its late answer must not draw the table over
  // the page the player moved on to (the answer is held back to make the race certain).
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await p.goto(p.url().replace(/#.*$/, '#/daily/8'));
  await p.locator(tid('daily')).waitFor();
  await p.route('**/api/tables/*', async (r) => { await held; await r.continue(); });
  await p.goto(table);
  await p.locator(tid('daily')).waitFor({ state: 'detached' });
  await p.goto(p.url().replace(/#.*$/, '#/daily/8'));
  await p.locator(tid('daily')).waitFor();
  release();
  await p.waitForTimeout(500);
  await p.unroute('**/api/tables/*');
  if (!(await p.locator(tid('daily')).isVisible())) throw new Error('a late table page replaced the daily page');
  if ((await p.locator(tid('table-page')).count()) !== 0) throw new Error('a late table page was drawn');
  await p.screenshot({ path: join(outDir, 'daily-page.png'), fullPage: true });
});
