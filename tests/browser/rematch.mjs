// Browser test of the rematch: Ada plays a short Trump match against a bot (her moves go
// through a second WebSocket of the same page, always the first legal one); her table page
// then offers a rematch, she accepts, the bot has already, and the page moves to the new,
// started table. Then two people: Ada and Bob (on a phone) play a match; Ada accepts the
// rematch, and Bob's page must still offer it to him (a black-box walk found the buttons
// gone from every page once anyone accepted), saying Ada would like one; he accepts, and
// both pages move to the same new table.
// Usage: node tests/browser/rematch.mjs <base-url>

import { join } from 'node:path';
import { playOut, postJson, runBrowserTest } from './lib.mjs';

await runBrowserTest('rematch after a finished match', async ({ player, tid, log, outDir }) => {
  const a = await player('Ada');
  const table = await a.evaluate(async () => {
    const post = async (url, body) => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
      return r.json();
    };
    const created = await post('/api/tables', { game: 'trump', seats: 2, bots: 'easy', options: { target: 5 } });
    return created.table.id;
  });
  await a.goto(a.url().replace(/#.*$/, '') + `#/table/${table}`);
  await a.locator(tid('start-button')).click();
  // Play to the end through a socket of the page itself (the same cookie).
  await playOut(a, table);
  log('match finished');
  await a.locator(tid('rematch-panel')).waitFor();
  await a.locator(tid('back-to-lobby')).waitFor();
  await a.locator(tid('replay-link')).waitFor();
  // One person and a bot: nothing is rated, and the page says so.
  await a.locator(tid('rating-changes')).filter({ hasText: 'Not rated' }).waitFor();
  await a.screenshot({ path: join(outDir, 'rematch-offer.png'), fullPage: true });
  await a.locator(tid('rematch-accept')).click();
  await a.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash) && !u.hash.includes(table));
  const next = a.url().split('#/table/')[1];
  log(`rematch table ${next}`);
  const info = await a.evaluate(async (id) => (await fetch(`/api/tables/${id}`)).json(), next);
  if (info.status !== 'playing') throw new Error(`the rematch is ${info.status}`);
  if (info.options.target !== 5) throw new Error(`the rematch lost its options: ${JSON.stringify(info.options)}`);
  await a.locator(tid('table-page')).waitFor();

  // Two people.
  const b = await player('Bob', { phone: true });
  const duel = (await postJson(a, '/api/tables', { game: 'trump', seats: 2, options: { target: 5 } })).table.id;
  await postJson(b, `/api/tables/${duel}/join`, {});
  await postJson(a, `/api/tables/${duel}/start`, {});
  await Promise.all([playOut(a, duel), playOut(b, duel)]);
  log('two-person match finished');
  for (const p of [a, b]) await p.goto(p.url().replace(/#.*$/, '') + `#/table/${duel}`);
  await a.locator(tid('rematch-accept')).click();
  // Names in sentences come isolated (FSI … PDI, invisible): see seatText in web/app.js.
  await a.locator(tid('rematch-status')).filter({ hasText: 'waiting for \u2068Bob\u2069' }).waitFor();
  await b.locator(tid('rematch-status')).filter({ hasText: '\u2068Ada\u2069 would like a rematch' }).waitFor();
  await b.screenshot({ path: join(outDir, 'rematch-asked.png'), fullPage: true });
  await b.locator(tid('rematch-accept')).click();
  const moved = (p) => p.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash) && !u.hash.includes(duel));
  await Promise.all([moved(a), moved(b)]);
  const [na, nb] = [a, b].map((p) => p.url().split('#/table/')[1]);
  if (na !== nb) throw new Error(`the two pages went to different tables: ${na} and ${nb}`);
  log(`two-person rematch table ${na}`);
});
