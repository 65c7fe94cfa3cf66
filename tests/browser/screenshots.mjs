// Pictures for the README and docs: each game's table in the middle of a match against
// bots, at desktop (1280×900) and phone (390×844) size, written to docs/screenshots/.
// Run by scripts/screenshots.sh (which starts a server); it is a browser test like the
// others, so it also fails when a table does not come up.
// Usage: node tests/browser/screenshots.mjs <base-url> [out-dir]

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

const out = process.argv[3] || join(process.cwd(), 'docs', 'screenshots');
mkdirSync(out, { recursive: true });

/** Plays `moves` of the page's own moves (first legal action) through a socket of its own. */
const playSome = (page, id, moves) => page.evaluate(([table, n]) => new Promise((resolve) => {
  const ws = new WebSocket(`${location.origin.replace('http', 'ws')}/ws/table/${table}?updates=full`);
  let made = 0;
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type !== 'state') return;
    if (made >= n || m.table.status !== 'playing') { ws.close(); resolve(made); return; }
    if (m.legal && m.legal.length) {
      made += 1;
      ws.send(JSON.stringify({ type: 'act', version: m.version, action: m.legal[0] }));
    }
  };
  setTimeout(() => { ws.close(); resolve(made); }, 10_000);
}), [id, moves]);

await runBrowserTest('screenshots of every game', async ({ player, tid, log }) => {
  const games = [['trump', 3, 5], ['rummy', 2, 2], ['rummy', 1, 3], ['fibfib', 2, 4], ['nachos', 3, 4]];
  for (const phone of [false, true]) {
    const size = phone ? 'phone' : 'desktop';
    const p = await player(phone ? 'Mia' : 'Leonardo', { phone });
    const base = p.url().replace(/#.*$/, '');
    await p.emulateMedia({ reducedMotion: 'reduce' });
    await p.screenshot({ path: join(out, `lobby-${size}.png`) });
    for (const [game, seats, moves] of games) {
      const id = await p.evaluate(async ([g, n]) => {
        const r = await fetch('/api/tables', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ game: g, seats: n, bots: 'normal' }) });
        const t = (await r.json()).table.id;
        await fetch(`/api/tables/${t}/start`, { method: 'POST' });
        return t;
      }, [game, seats]);
      await playSome(p, id, moves);
      await p.goto(`${base}#/table/${id}`);
      await p.locator(tid('players-bar')).waitFor();
      await p.waitForTimeout(300);
      const name = `${seats === 1 ? 'solitaire' : game}-${size}.png`;
      await p.screenshot({ path: join(out, name) });
      log(`${name}`);
    }
  }
});
