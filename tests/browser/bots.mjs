// Browser test of choosing bots per seat: a player creates a 3-seat Trump table without
// automatic bots, puts a hard bot and an easy bot in the empty seats, takes the easy one
// out again for a normal one, starts, and the match begins with those levels shown.
// Usage: node tests/browser/bots.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('bots chosen per seat', async ({ player, tid, log, outDir }) => {
  const p = await player('Bea');
  await p.locator(tid('create-game')).selectOption('trump');
  await p.locator(tid('create-seats')).selectOption('3');
  await p.locator(tid('create-bots')).uncheck();
  await p.locator(tid('create-submit')).click();
  await p.locator(tid('table-page')).waitFor();
  await p.locator(tid('seat-bot-1')).selectOption('hard');
  await p.locator(tid('seat-row-1')).filter({ hasText: 'Bot (hard)' }).waitFor();
  await p.locator(tid('seat-bot-2')).selectOption('easy');
  await p.locator(tid('seat-row-2')).filter({ hasText: 'Bot (easy)' }).waitFor();
  await p.locator(tid('seat-unbot-2')).click();
  await p.locator(tid('seat-bot-2')).selectOption('normal');
  await p.locator(tid('seat-row-2')).filter({ hasText: 'Bot (normal)' }).waitFor();
  log('bots chosen: hard, normal');
  await p.screenshot({ path: join(outDir, 'bots-seats.png'), fullPage: true });
  await p.locator(tid('start-button')).click();
  await p.locator(tid('hand')).waitFor();
  log('match started');
});
