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
  await p.goto(p.url().replace(/#.*$/, '#/daily/8'));
  await p.locator(tid('daily')).waitFor();
  await p.screenshot({ path: join(outDir, 'daily-page.png'), fullPage: true });
});
