// Browser test of step replays: bots play a Fib-Fibonacci match to the end; its replay link
// is opened in a browser that never signed in (a shared link), stepped forwards and back
// with the buttons and the arrow keys, and shows every hand and each round's seed.
// Usage: node tests/browser/replay.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('a shared replay link, stepped through', async ({ base, player, tid, log, outDir }) => {
  const a = await player('Ada');
  const table = await a.evaluate(async () => {
    const post = async (url, body) => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
      return r.json();
    };
    const created = await post('/api/tables', { game: 'fibfib', seats: 2, bots: 'easy', join: false });
    const id = created.table.id;
    await post(`/api/tables/${id}/start`, {});
    for (let i = 0; i < 600; i++) {
      const t = await (await fetch(`/api/tables/${id}`)).json();
      if (t.status === 'finished') return id;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the bots did not finish');
  });
  log(`match ${table} finished`);

  // Someone who never signed in opens the link.
  const ctx = await a.context().browser().newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const v = await ctx.newPage();
  v.setDefaultTimeout(15_000);
  const errors = [];
  v.on('pageerror', (e) => errors.push(e.message));
  v.on('console', (m) => m.type() === 'error' && !m.text().includes('401') && errors.push(m.text()));
  await v.goto(`${base}/#/replay/${table}`);
  await v.locator(tid('replay-title')).waitFor();
  const step = v.locator(tid('replay-step'));
  const at = async (n) => {
    await step.filter({ hasText: new RegExp(`^Step ${n} of `) }).waitFor();
  };
  await at(0);
  const total = Number((await step.textContent()).match(/of (\d+)/)[1]);
  if (!(total > 2)) throw new Error(`only ${total} steps`);
  // Every hand is shown, and each round's seed.
  const hands = await v.locator(tid('replay-hand')).allTextContents();
  if (hands.length !== 2 || hands.some((t) => t.includes('(no cards)'))) throw new Error(`hands: ${hands}`);
  const seeds = await v.locator(`${tid('replay-seed')} code.seed`).allTextContents();
  if (!seeds.length || !/^[0-9a-f]{64}$/.test(seeds[0])) throw new Error(`seeds: ${seeds}`);
  log(`${total} steps, ${seeds.length / 2} round(s)`);

  await v.locator(tid('replay-next')).click();
  await at(1);
  const before = await v.locator(tid('replay-hand')).allTextContents();
  await v.keyboard.press('ArrowRight');
  await at(2);
  await v.keyboard.press('ArrowLeft');
  await at(1);
  const again = await v.locator(tid('replay-hand')).allTextContents();
  if (JSON.stringify(before) !== JSON.stringify(again)) throw new Error('stepping back did not restore the hands');
  await v.locator(tid('replay-last')).click();
  await at(total);
  await v.keyboard.press('Home');
  await at(0);
  await v.keyboard.press('End');
  await at(total);
  await v.locator(tid('replay-prev')).click();
  await at(total - 1);
  // The viewpoint can change to the other seat.
  await v.locator(tid('replay-seat')).selectOption('1');
  await at(total - 1);
  await v.screenshot({ path: join(outDir, 'replay-phone.png'), fullPage: true });
  const wide = await v.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
  if (wide) throw new Error('the replay page scrolls sideways on a phone');
  if (errors.length) throw new Error(`errors in the replay page: ${errors.join('; ')}`);
  await ctx.close();
});
