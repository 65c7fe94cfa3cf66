// Browser test of the Fib-Fibonacci table: a human plays a joker (a new column) and then a
// 2 or 3 as the first card of a run, through the UI only. The deal is random, so the
// setup (HTTP API, from the page's own session) creates tables against a bot until the
// human's hand holds a joker and a 2 or 3; everything after that is clicks. Screenshots
// at 1280 px and 390 px go to tests/browser/test-results/.
// Usage: node tests/browser/fibfib.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('a joker and a first run card at the Fib-Fibonacci table', async ({ player, tid, log, outDir, deadline }) => {
  const page = await player('Fia');

  // --- Setup: a table whose deal gives Fia a joker and a 2 or 3 --------------------------
  const api = (method, path, body) => page.evaluate(async ([m, p, b]) => {
    const r = await fetch(p, { method: m, credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: b ? JSON.stringify(b) : undefined });
    return { status: r.status, body: await r.json().catch(() => null) };
  }, [method, path, body]);
  const handOf = async () => page.locator(tid('hand-card')).evaluateAll((els) =>
    els.map((e) => ({ id: Number(e.dataset.cardId), rank: e.dataset.rank })));

  let joker = null;
  let runner = null;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 40 || Date.now() > deadline - 60_000) throw new Error('no deal with a joker and a 2 or 3 in 40 tables');
    const c = await api('POST', '/api/tables', { game: 'fibfib', seats: 2, bots: 'random', join: true });
    if (c.status !== 201) throw new Error(`create: ${c.status} ${JSON.stringify(c.body)}`);
    const id = c.body.table.id;
    const s = await api('POST', `/api/tables/${id}/start`);
    if (s.status !== 200) throw new Error(`start: ${s.status} ${JSON.stringify(s.body)}`);
    await page.goto(`${page.url().split('#')[0]}#/table/${id}`);
    await page.locator(`${tid('table-page')}[data-table-id="${id}"] ${tid('hand')} ${tid('hand-card')}`).first().waitFor();
    const hand = await handOf();
    joker = hand.find((c) => c.rank === 'joker') ?? null;
    runner = hand.find((c) => c.rank === 'two' || c.rank === 'three') ?? null;
    log(`table ${attempt}: hand ${hand.map((c) => c.rank).join(' ')}`);
    if (joker && runner) break;
  }

  // Fia's turn: some card of hers is playable (the bot may have moved first).
  const myTurn = () => page.locator(`${tid('my-seat')}[data-turn="true"]`).waitFor({ timeout: 20_000 });
  await myTurn();
  await page.screenshot({ path: join(outDir, 'fibfib-start-1280.png'), fullPage: true });
  const columnsBefore = await page.locator(tid('column')).count();

  // --- The joker: select it, the new-column spot appears, play it alone ------------------
  const card = (id) => page.locator(`${tid('hand-card')}[data-card-id="${id}"]`);
  await card(joker.id).click();
  await page.locator(tid('new-column')).waitFor();
  if ((await card(joker.id).getAttribute('data-selected')) !== 'true') throw new Error('the joker is not shown selected');
  // The bonus cards (2, 3 or 6 in hand) are offered while the joker is selected.
  if ((await card(runner.id).getAttribute('data-playable')) !== 'true') throw new Error(`the ${runner.rank} is not offered as a bonus`);
  await page.screenshot({ path: join(outDir, 'fibfib-joker-selected-1280.png'), fullPage: true });
  await page.locator(tid('joker-alone')).click();
  await card(joker.id).waitFor({ state: 'detached' });
  await page.locator(tid('new-column')).waitFor({ state: 'detached' });
  const columnsAfter = await page.locator(tid('column')).count();
  if (columnsAfter !== columnsBefore + 1) {
    // Only a refill could remove a column in between; say so rather than guess.
    log(`columns ${columnsBefore} -> ${columnsAfter} (a refill may have removed one)`);
  }
  log(`joker #${joker.id} played`);

  // --- The first run card: select the 2/3, openings light up, click one ------------------
  await myTurn();
  if (!(await card(runner.id).count())) throw new Error('the 2/3 left the hand before it was played');
  await card(runner.id).click();
  const targets = page.locator(`${tid('opening')}[data-target="true"]`);
  await targets.first().waitFor();
  const n = await targets.count();
  // Every highlighted opening must be a first-card opening (R-44: a 2 or 3 starts a run;
  // a 3 may also be a second card after a 2, so those count too).
  const stages = await targets.evaluateAll((els) => els.map((e) => e.dataset.stage));
  if (stages.some((s) => s !== 'first' && s !== 'second')) throw new Error(`odd openings highlighted: ${stages}`);
  // Prefer an opening of the joker's new column, which is empty (a true first card).
  let target = targets.first();
  for (let i = 0; i < n; i++) {
    if ((await targets.nth(i).getAttribute('data-stage')) === 'first') { target = targets.nth(i); break; }
  }
  const col = await target.getAttribute('data-column');
  const side = await target.getAttribute('data-side');
  log(`${n} openings highlighted for the ${runner.rank}; playing on column ${col} side ${side}`);
  await page.screenshot({ path: join(outDir, 'fibfib-opening-1280.png'), fullPage: true });
  await target.click();
  await card(runner.id).waitFor({ state: 'detached' });
  // The card is now in a run on the table (wherever the bot's move may have shifted it),
  // unless the bot's next move swapped it out with a 4 of its own (R-43: "Bot … swapped
  // 4♠ for 2♠"), which the table then says.
  const onTable = page.locator(`${tid('run')} ${tid('table-card')}[data-card-id="${runner.id}"]`);
  const swappedOut = page.getByText(/swapped .+ for /);
  await onTable.or(swappedOut).first().waitFor();
  const last = await page.locator(tid('fibfib')).textContent();
  if (!last) throw new Error('empty table');
  log(`${runner.rank} #${runner.id} ${(await onTable.count()) ? 'is on the table' : 'was swapped out by the bot'}`);

  // --- Screenshots, desktop and phone ---------------------------------------------------------
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(outDir, 'fibfib-1280.png'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(outDir, 'fibfib-390.png'), fullPage: true });
  // The How-to-play page of the game is there.
  await page.goto(`${page.url().split('#')[0]}#/rules/fibfib`);
  await page.locator(tid('rules')).filter({ hasText: 'Fib-Fibonacci' }).waitFor();
  await page.locator(tid('rules')).filter({ hasText: 'The big wild' }).waitFor();
  log('rules page shown');
});
