// What people type, as others' pages draw it (a walk of names and chat found these):
// - a name of a few very wide characters (﷽) or a tournament name of one long run does not
//   widen the page (profile, table, tournament list), at desktop and phone size;
// - the operator's scheduled tournament is marked "official" on the list, and a player's
//   tournament of the same name is not;
// - the name box takes 24 emoji (the browser counts two units for each);
// - a link with a broken escape (`%`) still shows its page;
// - the replay's final scores isolate each name (<bdi>), so a right-to-left name does not
//   carry its score and the next name along.
// The server runs with a schedule of one event named "Official Hourly" (tests/e2e/browser.rs).
// Usage: node tests/browser/names.mjs <base-url>

import { playOut, postJson, runBrowserTest } from './lib.mjs';

await runBrowserTest('names and other typed text on the page', async ({ player, tid, log }) => {
  // How far the page scrolls sideways, and what sticks out (the navigation scrolls by
  // itself and does not count).
  const sideways = async (page) => {
    const [over, out] = await page.evaluate(() => {
      const d = document.documentElement;
      const wide = [...document.querySelectorAll('main *, header *')]
        .filter((e) => e.getBoundingClientRect().right > d.clientWidth + 1 && !e.closest('nav'))
        .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}[${e.dataset.testid || ''}]`);
      return [d.scrollWidth - d.clientWidth, wide.slice(0, 6).join(', ')];
    });
    return over > 0 ? `${over} px (${out})` : 0;
  };

  // The name box: 24 emoji fit.
  const welcome = await player('welcome', { guest: false });
  const emoji = '😀'.repeat(24);
  await welcome.locator('#name').fill(emoji);
  const kept = await welcome.locator('#name').inputValue();
  if (kept !== emoji) throw new Error(`the name box kept ${[...kept].length} of 24 emoji`);
  log('the name box takes 24 emoji');

  for (const phone of [false, true]) {
    const size = phone ? 'phone' : 'desktop';
    const wide = await player('﷽'.repeat(12), { phone });
    const base = wide.url().replace(/#.*$/, '');
    const me = await wide.evaluate(async () => (await (await fetch('/api/me')).json()).id);
    await wide.goto(`${base}#/players/${me}`);
    await wide.locator(tid('profile-name')).waitFor();
    await wide.waitForTimeout(200);
    const profileOver = await sideways(wide);
    if (profileOver) throw new Error(`${size}: the profile of a wide name scrolls sideways by ${profileOver}`);
    // A Trump table with bots: the name in the seats, the players and the status line.
    await wide.goto(`${base}#/`);
    await wide.locator(tid('create-game')).selectOption('trump');
    await wide.locator(tid('create-seats')).selectOption('2');
    await wide.locator(tid('create-submit')).click();
    await wide.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
    await wide.locator(tid('start-button')).click();
    await wide.locator(tid('hand')).waitFor();
    await wide.waitForTimeout(300);
    const tableOver = await sideways(wide);
    if (tableOver) throw new Error(`${size}: a table with a wide name scrolls sideways by ${tableOver}`);
    log(`${size}: a wide name on the profile and at a table`);
  }

  // Tournaments: the scheduled one is marked; a player's of the same name, and one of a
  // long run of letters, are not, and do not widen the list.
  const ada = await player('Ada');
  await ada.evaluate(async () => {
    const r = await fetch('/api/account/claim', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ada', password: 'correct horse battery' }),
    });
    if (!r.ok) throw new Error(`claim: ${r.status} ${await r.text()}`);
  });
  for (const name of ['Official Hourly', 'W'.repeat(60)]) {
    await postJson(ada, '/api/tournaments', { name, game: 'trump', kind: { type: 'swiss', rounds: 2 }, table_size: 2, start_when: 8 });
  }
  const base = ada.url().replace(/#.*$/, '');
  await ada.goto(`${base}#/tournaments`);
  const rows = ada.locator(tid('tournament-row')).filter({ hasText: 'Official Hourly' });
  await rows.nth(1).waitFor({ timeout: 20_000 });
  // The schedule may have announced one occurrence or two (its window spans two hours):
  // each is marked, and the player's one is not.
  const marks = await rows.evaluateAll((trs) => trs.map((tr) => tr.querySelector('[data-testid="t-official"]') !== null));
  if (marks.filter((m) => !m).length !== 1 || !marks.some(Boolean)) throw new Error(`the "Official Hourly" rows are marked ${JSON.stringify(marks)}`);
  await ada.setViewportSize({ width: 390, height: 844 });
  await ada.waitForTimeout(200);
  const listOver = await sideways(ada);
  if (listOver) throw new Error(`the tournament list scrolls sideways by ${listOver}`);
  await ada.setViewportSize({ width: 1280, height: 900 });
  log('the scheduled tournament alone is marked official; a long name wraps');

  // A broken escape in a link.
  const adaId = await ada.evaluate(async () => (await (await fetch('/api/me')).json()).id);
  await ada.goto(`${base}#/players/${adaId}/%`);
  await ada.locator(tid('profile-name')).filter({ hasText: 'Ada' }).waitFor();
  log('a link with a lone % shows its page');

  // A right-to-left name in a replay's final scores is isolated.
  const rtl = await player('אבג');
  const bo = await player('Bo');
  const duel = (await postJson(rtl, '/api/tables', { game: 'trump', seats: 2, options: { target: 5 } })).table.id;
  await postJson(bo, `/api/tables/${duel}/join`, {});
  await postJson(rtl, `/api/tables/${duel}/start`, {});
  await Promise.all([playOut(rtl, duel), playOut(bo, duel)]);
  await rtl.goto(`${base}#/replay/${duel}`);
  const summary = rtl.locator(tid('replay-summary'));
  await summary.waitFor();
  const isolated = await summary.evaluate((p) => [...p.querySelectorAll('bdi')].map((b) => b.textContent));
  if (!isolated.includes('אבג')) throw new Error(`the replay's summary isolates [${isolated}]`);
  log(`the replay's summary: "${await summary.textContent()}"`);

  // In a sentence of the table's page, a name is isolated too (FSI … PDI): a watcher reads
  // who won, whichever of the two it was.
  const watcher = await player('Wes');
  await watcher.goto(`${base}#/table/${duel}`);
  const line = watcher.locator(tid('status-line'));
  await line.filter({ hasText: 'Match over' }).waitFor();
  const said = await line.textContent();
  if (!said.includes('\u2068אבג\u2069 won') && !said.includes('\u2068Bo\u2069 won')) {
    throw new Error(`the winner's name is not isolated in ${JSON.stringify(said)}`);
  }
  log(`the status line: ${JSON.stringify(said)}`);
});
