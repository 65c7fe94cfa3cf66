// Browser test of quick play, on a server whose bots fill after one second: Ada, on a
// desktop page, picks two-player Trump and presses "Play now"; the panel says she is
// looking for players, the lobby's count shows her waiting, and when bots take the empty
// seat her page moves to the started table. Bob, on a phone, presses "Play bots now" and
// is at a started table at once.
// Usage: node tests/browser/quickplay.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

const tableOf = (page) => page.url().split('#/table/')[1];
const info = (page, id) => page.evaluate(async (t) => (await fetch(`/api/tables/${t}`)).json(), id);

await runBrowserTest('play now with a bot fill, and play bots now', async ({ player, tid, log, outDir }) => {
  const a = await player('Ada');
  await a.locator(tid('quickplay')).waitFor();
  const label = await a.locator(`${tid('qp-pick')} option:checked`).textContent();
  if (!/Trump, 2 players/.test(label)) throw new Error(`the default choice is ${label}`);
  await a.locator(tid('qp-info')).filter({ hasText: '0 waiting' }).waitFor();
  await a.locator(tid('qp-play')).click();
  await a.locator(tid('qp-status')).filter({ hasText: 'Looking for players' }).waitFor();
  // The pool's count no longer offers her a newcomer's estimate of it.
  const said = await a.locator(tid('qp-info')).textContent();
  if (/about/.test(said)) throw new Error(`while she waits the pool says ${said}`);
  await a.screenshot({ path: join(outDir, 'quickplay-waiting.png') });
  log('Ada waits');
  await a.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash));
  await a.locator(tid('table-page')).waitFor();
  const t = await info(a, tableOf(a));
  if (t.status !== 'playing') throw new Error(`the quick-play table is ${t.status}`);
  const kinds = t.seats.map((s) => s.kind).join(',');
  if (kinds !== 'player,bot') throw new Error(`seats ${kinds}`);
  log(`Ada seated at ${t.id} with a bot`);

  const b = await player('Bob', { phone: true });
  // The lobby lists Ada's table, and its game filter hides it under another game.
  await b.locator(`${tid('table-list')} [data-table-id="${t.id}"]`).waitFor();
  await b.locator(tid('lobby-filter')).selectOption('nachos');
  await b.locator(tid('no-tables')).waitFor();
  await b.locator(tid('lobby-filter')).selectOption('trump');
  await b.locator(`${tid('table-list')} [data-table-id="${t.id}"]`).waitFor();
  const box = await b.locator(tid('quickplay')).boundingBox();
  const list = await b.locator(tid('table-list')).boundingBox();
  if (!(box.y < list.y)) throw new Error('on a phone "Play now" comes before the table list');
  await b.locator(tid('qp-pick')).selectOption({ label: 'Fibonachos, 3 players' });
  await b.locator(tid('qp-bots')).click();
  await b.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash));
  await b.locator(tid('table-page')).waitFor();
  const u = await info(b, tableOf(b));
  if (u.game !== 'nachos' || u.seats.length !== 3 || u.status !== 'playing') {
    throw new Error(`bots-now table: ${JSON.stringify(u)}`);
  }
  await b.screenshot({ path: join(outDir, 'quickplay-bots-now.png') });
});
