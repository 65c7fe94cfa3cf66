// Browser test of the lobby's window on a server that shows 2 tables (`--lobby-shown 2`):
// with 3 Trump tables and 1 Fibonachos table listed, the lobby draws the first 2 and says
// how many more there are; picking a game asks the server for that game's first tables
// (the Fibonachos one alone, nothing more; then 2 of the 3 Trump ones, 1 more); a new table
// takes the first place.
// Usage: node tests/browser/lobby_window.mjs <base-url>

import { runBrowserTest } from './lib.mjs';

await runBrowserTest('the lobby shows the first tables and how many more', async ({ player, tid, log }) => {
  const p = await player('Lia');
  const create = (game, seats) => p.evaluate(async ([g, n]) => {
    const r = await fetch('/api/tables', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ game: g, seats: n }) });
    if (r.status !== 201) throw new Error(`create ${g}: ${r.status}`);
    return (await r.json()).table.id;
  }, [game, seats]);
  const trump = [];
  for (let i = 0; i < 3; i += 1) {
    trump.push(await create('trump', 2));
    await p.waitForTimeout(5);
  }
  const nachos = await create('nachos', 3);
  const rows = p.locator(tid('table-row'));
  const more = p.locator(tid('more-tables'));
  const ids = async () => rows.evaluateAll((els) => els.map((e) => e.dataset.tableId));
  const expect = async (what, want, moreText) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const got = await ids();
      const text = (await more.count()) ? (await more.textContent()) : null;
      const ok = JSON.stringify(got) === JSON.stringify(want)
        && (moreText === null ? text === null : (text ?? '').includes(moreText));
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`${what}: rows ${JSON.stringify(got)} (wanted ${JSON.stringify(want)}), more: ${JSON.stringify(text)} (wanted ${JSON.stringify(moreText)})`);
      await p.waitForTimeout(100);
    }
    log(`${what}: ${want.length} rows${moreText ? `, "${moreText}"` : ''}`);
  };
  await expect('every game', [nachos, trump[2]], 'and 2 more tables');
  await p.locator(tid('lobby-filter')).selectOption('nachos');
  await expect('Fibonachos', [nachos], null);
  await p.locator(tid('lobby-filter')).selectOption('trump');
  await expect('Trump', [trump[2], trump[1]], 'and 1 more table');
  // A new Trump table comes first; the oldest shown leaves the page's list.
  const newest = await create('trump', 2);
  await expect('a new Trump table', [newest, trump[2]], 'and 2 more tables');
});
