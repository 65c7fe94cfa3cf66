// Browser test of a five-seat Fibonachos table on a phone (390×844; issue #33, item 5): Mia
// sits with four bots and plays round 1 by tapping her playable cards. At each of her turns
// her whole hand lies in the first screen, above the fold and not cut: the seats, the trick
// and the facts above it must leave room, however many tricks were won and however many
// cards lie in the trick. Within the game the hand keeps its place from turn to turn (the
// seats and the trick keep one height on a phone), whatever the font wraps. The page never
// scrolls sideways. Each turn's log line lists the heights of what lies above the hand, so
// that a failure on another machine says what grew. Then Mia plays a few turns of Trump
// and of Fibonacci 8 on the same phone: the hand keeps its place within each game too.
// Usage: node tests/browser/nachos_phone.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

const VIEWPORT = { width: 390, height: 844 };

await runBrowserTest('a five-seat Fibonachos hand fits a phone screen', async ({ base, player, tid, log, outDir }) => {
  const p = await player('Mia', { phone: true });
  const size = p.viewportSize();
  if (size.width !== VIEWPORT.width || size.height !== VIEWPORT.height) throw new Error(`viewport ${size.width}×${size.height}`);
  const id = await p.evaluate(async () => {
    const r = await fetch('/api/tables', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ game: 'nachos', seats: 5, bots: 'easy' }) });
    const t = (await r.json()).table.id;
    await fetch(`/api/tables/${t}/start`, { method: 'POST' });
    return t;
  });
  await p.goto(`${base}/#/table/${id}`);
  await p.locator(tid('hand')).waitFor();
  const problems = [];
  const inGame = [];
  // Five players: nine cards each, nine turns of Mia in round 1.
  for (let turn = 1; turn <= 9; turn += 1) {
    const playable = p.locator(`${tid('hand-card')}.playable`);
    await playable.first().waitFor();
    await p.waitForTimeout(150);
    const m = await p.evaluate(() => {
      const box = document.querySelector('[data-testid="hand"]').getBoundingClientRect();
      return {
        top: box.top + scrollY, bottom: box.bottom + scrollY, left: box.left, right: box.right,
        cards: document.querySelectorAll('[data-testid="hand-card"]').length,
        wide: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        // The hand's place within the game, and the heights of everything above it: the
        // hand's earlier siblings, then its section's, up to the page.
        inGame: box.top - document.querySelector('.nachos').getBoundingClientRect().top,
        above: (() => {
          const out = [];
          for (let el = document.querySelector('[data-testid="hand"]'); el && el !== document.body; el = el.parentElement) {
            for (let sib = el.previousElementSibling; sib; sib = sib.previousElementSibling) {
              const hgt = Math.round(sib.getBoundingClientRect().height);
              if (hgt > 1) out.push(`${sib.dataset.testid || String(sib.className).split(' ')[0] || sib.tagName.toLowerCase()} ${hgt}`);
            }
          }
          return out.join(', ');
        })(),
      };
    });
    if (m.cards !== 10 - turn) throw new Error(`turn ${turn}: ${m.cards} cards in the hand`);
    const at = `turn ${turn} (${m.cards} cards)`;
    if (m.top < 0 || m.bottom > VIEWPORT.height || m.left < 0 || m.right > VIEWPORT.width) {
      problems.push(`${at}: the hand spans x ${Math.round(m.left)}–${Math.round(m.right)}, y ${Math.round(m.top)}–${Math.round(m.bottom)}, not within the ${VIEWPORT.width}×${VIEWPORT.height} first screen`);
    }
    if (m.wide > 0) problems.push(`${at}: the page scrolls sideways by ${m.wide} px`);
    inGame.push(m.inGame);
    if (Math.max(...inGame) - Math.min(...inGame) > 2) {
      problems.push(`${at}: the hand moved within the game, to ${Math.round(m.inGame)} px below its top (turns so far: ${inGame.map(Math.round).join(', ')})`);
    }
    if (turn === 1 || turn === 3) await p.screenshot({ path: join(outDir, `nachos5-phone-turn${turn}.png`), fullPage: true, animations: 'disabled' });
    log(`${at}: hand at y ${Math.round(m.top)}–${Math.round(m.bottom)} (above it: ${m.above})`);
    await playable.first().click();
    // The card leaves the hand (after the last one, round 2 deals a new hand).
    await p.waitForFunction((n) => document.querySelectorAll('[data-testid="hand-card"]').length !== n, m.cards);
  }
  if (problems.length) throw new Error(`the hand leaves the first screen:\n  ${problems.join('\n  ')}`);

  // The other games keep the hand in its place too (a walk saw it jump between moves: the
  // last trick's reminder and a trick's "winning so far" note in Trump; an opponent's laid
  // sets, the hint's and the log's lines and a pile's button in Fibonacci 8).
  const steady = async (game, seats, options, turns, play) => {
    const t = await p.evaluate(async ([g, n, o]) => {
      const r = await fetch('/api/tables', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ game: g, seats: n, bots: 'easy', options: o }) });
      const tb = (await r.json()).table.id;
      await fetch(`/api/tables/${tb}/start`, { method: 'POST' });
      return tb;
    }, [game, seats, options]);
    await p.goto(`${base}/#/table/${t}`);
    await p.locator(tid('hand')).waitFor();
    const places = [];
    const where = async (what) => {
      await p.waitForTimeout(150);
      const y = await p.evaluate(() => Math.round(document.querySelector('[data-testid="hand"]').getBoundingClientRect().top
        - document.querySelector('.game-root').getBoundingClientRect().top));
      places.push(`${what} ${y}`);
      return y;
    };
    const mine = () => p.waitForFunction(() => /your turn|Match over/.test(document.querySelector('[data-testid="status-line"]')?.textContent ?? ''));
    for (let turn = 1; turn <= turns; turn += 1) {
      await mine();
      if (/Match over/.test(await p.locator(tid('status-line')).textContent())) break;
      await play(turn, where);
    }
    const ys = places.map((x) => Number(x.split(' ').pop()));
    log(`${game}: the hand at ${places.join(', ')} px below the game's top`);
    if (Math.max(...ys) - Math.min(...ys) > 2) throw new Error(`${game} on a phone: the hand moved within the game (${places.join(', ')})`);
  };
  const tapped = (n) => p.waitForFunction((k) => document.querySelectorAll('[data-testid="hand-card"]').length !== k, n);
  await steady('trump', 3, {}, 8, async (turn, where) => {
    const playable = p.locator(`${tid('hand-card')}.playable`);
    await playable.first().waitFor();
    await where(`turn ${turn}`);
    const n = await p.locator(tid('hand-card')).count();
    await playable.first().click();
    await tapped(n);
  });
  await steady('rummy', 2, { target: 8 }, 5, async (turn, where) => {
    await p.locator(tid('act-draw-stock')).waitFor();
    await where(`turn ${turn}`);
    const n = await p.locator(tid('hand-card')).count();
    await p.locator(tid('act-draw-stock')).click();
    await tapped(n);
    await where(`drawn ${turn}`);
    await p.locator(tid('hand-card')).first().click();
    await where(`picked ${turn}`);
    await p.locator(tid('act-discard-sel')).click();
    await tapped(n + 2);
  });
});
