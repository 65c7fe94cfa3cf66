// Browser test of a tournament: Ada (a claimed account) creates one through the form (it
// shows on the list and its own page) and cancels it there, and another (a two-round
// Swiss of short Trump matches) through the API; Ada and Bob join it from its page; when
// it starts, both pages go to their table by themselves; they play it out (first legal
// move, through a socket of each page); Ada's tournament page then shows the standings
// moved, and when round 2 is paired her page goes to her next table by itself.
// Usage: node tests/browser/tournament.mjs <base-url>

import { playOut, runBrowserTest } from './lib.mjs';

await runBrowserTest('a tournament: join, first game, standings', async ({ player, tid, log }) => {
  const a = await player('Ada');
  const b = await player('Bob');
  // Only a claimed account creates tournaments: Ada claims hers.
  await a.evaluate(async () => {
    const r = await fetch('/api/account/claim', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ada', password: 'correct horse battery' }),
    });
    if (!r.ok) throw new Error(`claim: ${r.status} ${await r.text()}`);
  });
  // The form.
  await a.goto(a.url().replace(/#.*$/, '') + '#/tournaments');
  await a.locator(tid('tournament-form')).waitFor();
  await a.locator(tid('t-name')).fill('Form Cup');
  await a.locator(tid('t-create')).click();
  await a.locator(tid('t-title')).filter({ hasText: 'Form Cup' }).waitFor();
  log('created through the form');
  // Its creator cancels it from its page: the page says so (the lobby socket's update).
  await a.locator(tid('t-cancel')).click();
  await a.locator(tid('t-status')).filter({ hasText: 'cancelled' }).waitFor();
  await a.locator(tid('t-cancelled')).filter({ hasText: 'by its creator' }).waitFor();
  if (await a.locator(tid('t-join')).count()) throw new Error('a cancelled tournament offers Join');
  log('cancelled from its page');
  // The one they play: short matches.
  const id = await a.evaluate(async () => {
    const r = await fetch('/api/tournaments', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Browser Swiss', game: 'trump', kind: { type: 'swiss', rounds: 2 }, table_size: 2, options: { target: 5 }, start_when: 2, pace: { kind: 'untimed' } }),
    });
    if (!r.ok) throw new Error(`create: ${r.status} ${await r.text()}`);
    return (await r.json()).id;
  });
  await a.goto(a.url().replace(/#.*$/, '') + '#/tournaments');
  await a.locator(tid('tournament-link')).filter({ hasText: 'Browser Swiss' }).click();
  await a.locator(tid('t-title')).filter({ hasText: 'Browser Swiss' }).waitFor();
  await a.locator(tid('t-join')).click();
  await a.locator(tid('t-standing')).first().waitFor();
  log('Ada joined');
  await b.goto(b.url().replace(/#.*$/, '') + `#/tournament/${id}`);
  await b.locator(tid('t-join')).click();
  log('Bob joined: it starts');
  // Both pages go to the table by themselves.
  const onTable = (p) => p.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash), { timeout: 20_000 });
  await Promise.all([onTable(a), onTable(b)]);
  const table = a.url().split('#/table/')[1];
  if (b.url().split('#/table/')[1] !== table) throw new Error('Ada and Bob are at different tables');
  await a.locator(tid('table-page')).waitFor();
  log(`both at ${table}`);
  await Promise.all([playOut(a, table), playOut(b, table)]);
  log('first game over');
  // Round 2 is paired at once, and Ada's page goes to her next table.
  await a.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash) && !u.hash.includes(table), { timeout: 20_000 });
  log('Ada sent to her next game');
  await a.goto(a.url().replace(/#.*$/, '') + `#/tournament/${id}`);
  await a.locator(tid('t-standings')).waitFor();
  await a.locator(tid('t-score')).filter({ hasText: /^(1|0\.5)$/ }).first().waitFor();
  await a.locator(tid('t-replay')).first().waitFor();
  log('the standings moved');
});
