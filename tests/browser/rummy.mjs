// Browser test of the rummy table (Fibonacci 8, one seat = Solitaire), on a phone-sized
// touch screen: the player creates the table through the lobby form (game, Solitaire seat
// label, target option), and then, only by tapping, draws, lays down the opening meld,
// adds a card to a set (hand card, then the set) and discards. The deal is random: a
// table whose first few turns allow no opening or no addition is replaced by a new one
// (bounded). Also checks the Rules tabs list Solitaire. Usage: node tests/browser/rummy.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

const TABLES = 5;
const TURNS = 6;

await runBrowserTest('rummy: open, add to a set, discard', async ({ player, tid, log, outDir, deadline }) => {
  const p = await player('Fibo', { phone: true });

  // The Rules tabs list every game, and the rummy family's two pages.
  await p.goto(p.url().replace(/#.*$/, '') + '#/rules/solitaire');
  await p.locator(tid('rules')).filter({ hasText: 'Solitaire Fibonacci' }).waitFor();
  await p.locator(tid('rules-tab-rummy')).waitFor();
  await p.locator(tid('rules-tab-trump')).waitFor();
  await p.goto(p.url().replace(/#.*$/, '') + '#/');
  await p.locator(tid('create-form')).waitFor();

  const count = async (sel) => p.locator(sel).count();
  const num = async (sel, attr) => Number(await p.locator(sel).first().getAttribute(attr));
  // Waits until `f` holds (the page re-renders on each state message).
  const until = async (what, f, ms = 10_000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await f()) return;
      await p.waitForTimeout(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  // Ends the turn: tap a hand card, then the discard pile's "Discard here".
  const discard = async () => {
    const before = await num(tid('discard-pile'), 'data-count');
    await p.locator(tid('hand-card')).first().tap();
    await p.locator(tid('act-discard')).tap();
    await until('the discard', async () => (await num(tid('discard-pile'), 'data-count')) > before);
  };

  let done = false;
  let refused = false;
  for (let table = 1; table <= TABLES && !done; table++) {
    if (Date.now() > deadline) throw new Error('out of time');
    await p.goto(p.url().replace(/#.*$/, '') + '#/');
    await p.locator(tid('create-game')).selectOption('rummy');
    await p.locator(tid('create-target')).waitFor();
    const soloLabel = await p.locator(`${tid('create-seats')} option[value="1"]`).textContent();
    if (!/solitaire/i.test(soloLabel)) throw new Error(`the 1-seat choice is not labelled Solitaire: ${soloLabel}`);
    await p.locator(tid('create-seats')).selectOption('1');
    await p.locator(tid('create-target')).selectOption('8');
    await p.locator(tid('create-submit')).tap();
    await p.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
    await p.locator(tid('start-button')).tap();
    await p.locator(tid('hand')).waitFor();
    await p.locator(tid('rummy-info')).filter({ hasText: 'Solitaire Fibonacci 8' }).waitFor();
    log(`table ${table} started`);

    let opened = false;
    let added = false;
    for (let turn = 1; turn <= TURNS && !done; turn++) {
      const hand = await count(tid('hand-card'));
      await p.evaluate(() => { for (const e of document.querySelectorAll('[data-testid="hand-card"]')) e.__kept = true; });
      await p.locator(tid('act-draw-stock')).tap();
      await until('the draw', async () => (await count(tid('hand-card'))) === hand + 2);
      // The cards held before are the same elements (keyed by card): only the two drawn
      // are new, and only they fly in.
      const kept = await p.evaluate(() => [...document.querySelectorAll('[data-testid="hand-card"]')].filter((e) => e.__kept).length);
      if (kept !== hand) throw new Error(`a draw replaced ${hand - kept} of the ${hand} hand cards' elements`);
      if (!refused && (await count(tid('act-build-open')))) {
        // An opening of one card is refused, and the refusal says why in words (the
        // builder sends what the player laid out; the server judges it).
        await p.locator(tid('act-build-open')).tap();
        await p.locator(tid('open-builder')).waitFor();
        // The builder starts from the suggested opening (if any): empty it, then put one
        // hand card in.
        const inBuilder = p.locator(`${tid('open-builder')} .rm-bcard .rc`);
        for (let k = 0; k < 30 && (await inBuilder.count()); k++) await inBuilder.first().tap();
        await p.locator(tid('hand-card')).first().tap();
        await inBuilder.first().waitFor();
        if ((await inBuilder.count()) !== 1) throw new Error(`the builder holds ${await inBuilder.count()} cards, not 1`);
        await p.locator(tid('builder-lay-down')).tap();
        const r = p.locator(tid('refusal'));
        await r.waitFor();
        const text = await r.textContent();
        if (!/^(Your opening is not complete|That card cannot start a set)/.test(text)) {
          throw new Error(`a one-card opening was refused with ${JSON.stringify(text)} (code ${await r.getAttribute('data-code')})`);
        }
        refused = true;
        log(`a one-card opening was refused: ${text}`);
        if (await count(tid('builder-cancel'))) await p.locator(tid('builder-cancel')).tap();
      }
      if (!opened && (await count(tid('act-open')))) {
        await p.locator(tid('act-open')).tap();
        await until('the opening on the table', async () => (await count('[data-testid^="my-set-"]')) >= 2);
        opened = true;
        log(`table ${table} turn ${turn}: opened with ${await count('[data-testid^="my-set-"]')} sets`);
      }
      if (opened && !added) {
        // Select hand cards one by one until a set lights up as a target; tap that set.
        const n = await count(tid('hand-card'));
        for (let i = 0; i < n && !added; i++) {
          // Keep one card to discard.
          if ((await count(tid('hand-card'))) < 2) break;
          await p.locator(tid('hand-card')).nth(i).tap();
          await p.locator(tid('action-bar')).waitFor();
          const target = p.locator('.rm-set.target[data-testid^="my-set-"]');
          if ((await target.count()) === 0) continue;
          const key = await target.first().getAttribute('data-key');
          const before = Number(await target.first().getAttribute('data-total'));
          const wildChoice = target.first().locator('[data-testid^="set-"][data-testid*="-as-"]');
          if (await wildChoice.count()) await wildChoice.first().tap();
          else await target.first().tap();
          await until('the added card', async () => Number(await p.locator(tid(`my-set-${key}`)).getAttribute('data-total')) > before);
          added = true;
          log(`table ${table} turn ${turn}: added to set ${key} (${before} -> ${await p.locator(tid(`my-set-${key}`)).getAttribute('data-total')})`);
        }
        if (!added && (await count(tid('act-cancel')))) await p.locator(tid('act-cancel')).tap();
      }
      await discard();
      log(`table ${table} turn ${turn}: discarded`);
      if (opened && added) done = true;
      // A won or lost solitaire has no further turn.
      if (!done && (await count(tid('match-result')))) break;
    }
  }
  await p.screenshot({ path: join(outDir, 'rummy-phone.png'), fullPage: true });

  if (!refused) throw new Error('no turn offered the opening builder');
  if (!done) throw new Error(`no deal allowed opening and adding within ${TURNS} turns on ${TABLES} tables`);
  // The parts' order follows the breakpoint as soon as it is crossed (a phone turned on
  // its side), not at the table's next change (a solitaire table waits for its player).
  const handFirst = () => p.evaluate(() => {
    const hand = document.querySelector('.rm-hand-area');
    const sets = document.querySelector('[data-testid="my-table"]');
    return hand && sets ? Boolean(hand.compareDocumentPosition(sets) & Node.DOCUMENT_POSITION_FOLLOWING) : null;
  });
  if ((await handFirst()) !== true) throw new Error('on a phone the hand does not come before the sets');
  const phoneSize = p.viewportSize();
  await p.setViewportSize({ width: 1024, height: 800 });
  await until('the wide order after widening', async () => (await handFirst()) === false, 3000);
  await p.setViewportSize(phoneSize);
  await until('the phone order after narrowing', async () => (await handFirst()) === true, 3000);
  log('the order of the parts follows the breakpoint when it is crossed');
  log('opened, added to a set and discarded through the UI');

  // A finished match on the phone: the result's round breakdown (a table wider than the
  // phone) scrolls inside itself and does not widen the page. The match, a round of
  // Fibonacci 8 against a bot, is played through a socket of the page (the same cookie).
  const finished = await p.evaluate(async () => {
    const r = await fetch('/api/tables', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ game: 'rummy', seats: 2, bots: 'normal', options: { target: 8, match_length: { kind: 'rounds', count: 1 } } }),
    });
    const id = (await r.json()).table.id;
    await fetch(`/api/tables/${id}/start`, { method: 'POST' });
    await new Promise((resolve, reject) => {
      const ws = new WebSocket(`${location.origin.replace('http', 'ws')}/ws/table/${id}?updates=full`);
      const timer = setTimeout(() => reject(new Error('the match did not finish')), 60_000);
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        if (m.type !== 'state') return;
        if (m.table.status === 'finished') { clearTimeout(timer); ws.close(); resolve(); return; }
        const pick = (t) => m.legal?.find((x) => x.type === t);
        // Lay down whatever can go down, so that someone goes out.
        const a = pick('open') || pick('close_set') || pick('add_to_set') || pick('start_set') || pick('discard') || pick('draw_stock') || pick('draw_discard');
        if (a) ws.send(JSON.stringify({ type: 'act', version: m.version, action: a }));
      };
    });
    return id;
  });
  await p.goto(p.url().replace(/#.*$/, '') + `#/table/${finished}`);
  await p.locator(tid('match-result')).waitFor();
  await p.locator(tid('round-breakdown')).first().waitFor();
  const wide = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await p.screenshot({ path: join(outDir, 'rummy-phone-result.png'), fullPage: true });
  if (wide > 0) throw new Error(`the finished match's page scrolls sideways on a phone by ${wide} px`);
  log('a finished match fits the phone');
});
