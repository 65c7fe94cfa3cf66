// Browser test of the profile: Ada and Bob play a short rated Trump duel (their moves go
// through WebSockets of their own pages, always the first legal one); Ada's profile shows
// the Trump duel rating with its chart and a table of rated matches, whose replay link
// opens the replay. The end of the match shows both rating changes.
// Usage: node tests/browser/profile.mjs <base-url>

import { join } from 'node:path';
import { playOut, postJson, runBrowserTest } from './lib.mjs';

await runBrowserTest('a profile with its rating chart', async ({ player, tid, log, outDir }) => {
  const a = await player('Ada');
  const b = await player('Bob', { phone: true });
  const created = await postJson(a, '/api/tables', { game: 'trump', seats: 2, options: { target: 5 } });
  const table = created.table.id;
  await postJson(b, `/api/tables/${table}/join`, {});
  await postJson(a, `/api/tables/${table}/start`, {});
  await Promise.all([playOut(a, table), playOut(b, table)]);
  log('rated match finished');
  const me = await a.evaluate(async () => (await fetch('/api/me')).json());

  // The end of the match shows each person's rating change, winner up and loser down.
  await a.goto(a.url().replace(/#.*$/, '') + `#/table/${table}`);
  await a.locator(tid('rating-change')).nth(1).waitFor();
  const changes = await a.locator(tid('rating-change')).allTextContents();
  log(`rating changes: ${changes.join(' | ')}`);
  if (!changes.some((c) => /1500 → \d+ \(\+\d+\)/.test(c)) || !changes.some((c) => /1500 → \d+ \(−\d+\)/.test(c))) {
    throw new Error(`rating changes: ${changes.join(' | ')}`);
  }

  await b.goto(b.url().replace(/#.*$/, '') + `#/players/${me.id}/Ada`);
  await b.locator(tid('profile-name')).filter({ hasText: 'Ada' }).waitFor();
  const pool = b.locator(`${tid('profile-pool')}[data-game="trump"][data-pool="duel"]`);
  await pool.waitFor();
  await pool.locator('svg.rating-chart').waitFor();
  const summary = await b.locator(tid('profile-summary')).textContent();
  if (!/^1 rated match,/.test(summary)) throw new Error(`summary: ${summary}`);
  await b.screenshot({ path: join(outDir, 'profile-phone.png'), fullPage: true });
  await pool.locator('summary').click();
  await pool.locator(tid('history-replay')).first().click();
  await b.locator(tid('replay-title')).waitFor();
  if (!b.url().includes(`#/replay/${table}`)) throw new Error(`went to ${b.url()}`);
  log('profile → replay');
});
