// Browser test of match analyses (#32): bots play a short two-player Trump match to the
// end; a player opens its replay on a phone, asks for the analysis, watches it arrive (a
// progress bar while a worker has it), and then sees every seat's accuracy, the round's
// chart with its table, a cost or a tick beside each move, the step's evaluation, and the
// best next move marked on the cards.
// Usage: node tests/browser/analysis.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('a match analysed from its replay page', async ({ base, player, tid, log, outDir }) => {
  const a = await player('Ada', { phone: true });
  const table = await a.evaluate(async () => {
    const post = async (url, body) => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
      return r.json();
    };
    const created = await post('/api/tables', { game: 'trump', seats: 2, bots: 'normal', join: false, options: { target: 8 } });
    const id = created.table.id;
    await post(`/api/tables/${id}/start`, {});
    for (let i = 0; i < 1200; i++) {
      const t = await (await fetch(`/api/tables/${id}`)).json();
      if (t.status === 'finished') return id;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the bots did not finish');
  });
  log(`match ${table} finished`);

  const errors = [];
  a.on('pageerror', (e) => errors.push(e.message));
  a.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await a.goto(`${base}/#/replay/${table}`);
  await a.locator(tid('replay-title')).waitFor();
  await a.locator(tid('analysis-request')).click();
  // Queued or running (a progress bar), unless it was quicker than the page.
  const seats = a.locator(tid('analysis-seat'));
  await Promise.race([a.locator(tid('analysis-progress')).waitFor(), seats.first().waitFor()]);
  await seats.first().waitFor({ timeout: 240_000 });
  if ((await seats.count()) !== 2) throw new Error(`${await seats.count()} seats in the summary`);
  for (const t of await a.locator(tid('analysis-accuracy')).allTextContents()) {
    const acc = Number(t.replace(/[^0-9.]/g, ''));
    if (!(acc >= 0 && acc <= 100)) throw new Error(`accuracy ${t}`);
  }
  // The chart is a picture with a description, and a table of its points.
  const label = await a.locator(`${tid('analysis-chart')} svg`).getAttribute('aria-label');
  if (!/expected final score/.test(label)) throw new Error(`chart label: ${label}`);
  if ((await a.locator(`${tid('analysis-chart-table')} tbody tr`).count()) < 2) throw new Error('no chart table');
  // Every move that was a choice has its cost or a tick.
  const marks = await a.locator(`${tid('move-eval')}, ${tid('move-flag')}`).count();
  if (marks < 5) throw new Error(`${marks} moves annotated`);
  log(`${marks} moves annotated; accuracy ${await a.locator(tid('analysis-accuracy')).allTextContents()}`);

  // Step to the deal, then forwards until the next move is a choice: its best card is
  // marked in the hands, and the step after says how the move played compares.
  await a.keyboard.press('Home');
  let marked = 0;
  for (let i = 0; i < 40 && !marked; i++) {
    marked = await a.locator(tid('best-card')).count();
    if (!marked) await a.locator(tid('replay-next')).click();
  }
  if (marked !== 1) throw new Error(`${marked} best cards marked`);
  const best = (await a.locator(tid('best-card')).textContent()).replace('\u2605', '').trim();
  const next = await a.locator(tid('analysis-next')).textContent();
  if (!next.includes(best)) throw new Error(`"${next}" does not name the marked card ${best}`);
  await a.locator(tid('replay-next')).click();
  const said = await a.locator(tid('analysis-step')).textContent();
  if (!/played .*expects/.test(said)) throw new Error(`step evaluation: ${said}`);
  log(`best ${best}; then: ${said.slice(0, 120)}`);
  await a.screenshot({ path: join(outDir, 'analysis-phone.png'), fullPage: true });
  const wide = await a.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
  if (wide) throw new Error('the analysis scrolls sideways on a phone');
  if (errors.length) throw new Error(`errors in the page: ${errors.join('; ')}`);
});
