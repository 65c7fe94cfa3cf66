// Browser test of the Fibonachos table: Ada (1280 px) creates a 3-seat table with bots, Bob
// (phone width) joins it from the lobby, Ada starts, a bot takes the third seat, and both
// play by clicking their playable cards until round 1 ends. Checks along the way: the
// spicy card at stake, the cards of the trick in progress, the trick won and the spicy
// pile it feeds, the fibonachos "activated" state when it happens, the round summary and
// the scores table, and the How-to-play page at #/rules/nachos. Screenshots go to
// tests/browser/test-results/. Usage: node tests/browser/nachos.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('two players and a bot play a Fibonachos round', async ({ base, player, tid, log, outDir, deadline }) => {
  const a = await player('Ada');
  const b = await player('Bob', { phone: true });
  const pages = { A: a, B: b };

  // The How-to-play page is reachable in the client.
  await a.goto(`${base}/#/rules/nachos`);
  await a.locator(tid('rules')).filter({ hasText: 'fibonacho' }).waitFor();
  const rulesText = await a.locator(tid('rules')).textContent();
  for (const must of ['Fibonachos', 'spicy', '34']) {
    if (!rulesText.includes(must)) throw new Error(`the rules page does not mention ${must}`);
  }
  log('rules page shown at #/rules/nachos');
  await a.goto(`${base}/#/`);
  await a.locator(tid('create-form')).waitFor();

  // Ada creates a public 3-seat Fibonachos table with bots; Bob joins from the lobby.
  await a.locator(tid('create-game')).selectOption('nachos');
  await a.locator(tid('create-seats')).selectOption('3');
  await a.locator(tid('create-bots')).check();
  await a.locator(tid('create-private')).uncheck();
  await a.locator(tid('create-submit')).click();
  await a.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  const tableId = a.url().match(/#\/table\/([0-9a-f-]{36})/)[1];
  const row = b.locator(`${tid('table-row')}[data-table-id="${tableId}"]`);
  await row.waitFor();
  await row.locator(tid('table-join')).click();
  await b.waitForURL(new RegExp(`#/table/${tableId}`));
  await a.locator(tid('seat-row-1')).filter({ hasText: 'Bob' }).waitFor();
  await a.locator(tid('start-button')).click();
  for (const p of [a, b]) {
    await p.locator(tid('nachos-table')).waitFor();
    await p.locator(tid('hand')).waitFor();
  }
  log(`table ${tableId} started`);

  // 3 players: 15 cards each; the spicy card of the first trick is face up for everyone.
  for (const [who, p] of Object.entries(pages)) {
    const n = await p.locator(tid('hand-card')).count();
    if (n !== 15) throw new Error(`${who} holds ${n} cards, not 15`);
    const stake = Number(await p.locator(tid('spicy-at-stake')).getAttribute('data-value'));
    if (!(stake >= 1 && stake <= 5)) throw new Error(`${who}: no spicy card at stake (${stake})`);
  }
  log('hands of 15 and a spicy card at stake');

  // Play: whoever has a playable card clicks one, until round 1 ends.
  const played = { A: 0, B: 0 };
  let sawTrick = false;
  let sawWon = false;
  let refused = false;
  let sawActive = false;
  const tricksDone = async (p) => {
    const counts = await p.locator('[data-testid^="pile-"]').evaluateAll((els) => els.map((e) => Number(e.dataset.count)));
    return counts.reduce((x, y) => x + y, 0);
  };
  const roundOver = async (p) =>
    (await p.locator(tid('round-summary')).count()) > 0 ||
    Number((await p.locator(tid('round-no')).textContent().catch(() => '1')) || 1) >= 2;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`round 1 did not end in time (A ${played.A}, B ${played.B})`);
    if ((await roundOver(a)) && (await roundOver(b))) break;
    let clicked = false;
    for (const who of ['A', 'B']) {
      const p = pages[who];
      // Round 2 may have been dealt since the check above (the last card was played):
      // its cards are not for this loop.
      if (await roundOver(p)) continue;
      const cards = p.locator(`${tid('hand-card')}[data-playable="true"]`);
      const n = await cards.count();
      if (n === 0) continue;
      // Only cards the server listed in `legal` are raised: the others are marked
      // unplayable (aria-disabled: pressing one shows why).
      const all = await p.locator(tid('hand-card')).count();
      const disabled = await p.locator(`${tid('hand-card')}[aria-disabled="true"], ${tid('hand-card')}:disabled`).count();
      if (disabled !== all - n) throw new Error(`${who}: ${disabled} unplayable cards, expected ${all - n}`);
      if (!refused && disabled > 0) {
        // A card that does not follow the lead suit, pressed anyway: refused, in words.
        // (Playwright will not click an aria-disabled button: a person can, and a keyboard can.)
        await p.locator(`${tid('hand-card')}[aria-disabled="true"]`).first().focus();
        await p.keyboard.press('Enter');
        const said = await p.locator(tid('refusal')).filter({ hasText: 'You must follow' }).first().waitFor({ timeout: 3000 }).then(() => true, () => false);
        refused = true; // one try: whatever the state did meanwhile, play on afterwards
        if (!said) throw new Error(`${who}: an unplayable card was refused with ${JSON.stringify(await p.locator(tid('refusal')).allTextContents())}`);
        log(`${who} was told: ${await p.locator(tid('refusal')).first().textContent()}`);
        continue;
      }
      const pick = cards.nth(Math.floor(Math.random() * n));
      const label = await pick.getAttribute('title', { timeout: 1000 }).catch(() => null);
      try {
        await pick.click({ timeout: 2000 });
        played[who] += 1;
        clicked = true;
        log(`${who} played ${label}`);
      } catch {
        // The card went away (the state changed under us): look again.
        continue;
      }
    }
    // What the trick area shows, from Ada's side.
    const inTrick = await a.locator(`${tid('trick')} ${tid('trick-card')}`).count();
    if (inTrick > 0 && !(await a.locator(tid('trick-winner')).count())) {
      sawTrick = true;
      const stake = await a.locator(tid('spicy-at-stake')).getAttribute('data-value').catch(() => '');
      if (!stake) throw new Error('a trick is in progress but no spicy card is at stake');
    }
    if (!sawWon && (await a.locator(tid('trick-winner')).count())) {
      sawWon = true;
      await a.screenshot({ path: join(outDir, 'nachos-a-trick-won-1280.png'), fullPage: true, animations: 'disabled' });
    }
    if (!sawActive && (await a.locator(tid('fibonachos-active')).count())) {
      sawActive = true;
      // Active means two fibonachos lie in the trick.
      const fibs = await a.locator(`${tid('trick')} ${tid('trick-card')} [data-fibonacho="true"]`).count();
      if (fibs < 2) throw new Error(`fibonachos shown active with ${fibs} fibonacho(s) in the trick`);
      await a.screenshot({ path: join(outDir, 'nachos-a-fibonachos-1280.png'), fullPage: true, animations: 'disabled' });
      await b.screenshot({ path: join(outDir, 'nachos-b-fibonachos-390.png'), fullPage: true, animations: 'disabled' });
      log('fibonachos activated and shown');
    }
    if (played.A + played.B === 3) {
      await a.screenshot({ path: join(outDir, 'nachos-a-playing-1280.png'), fullPage: true, animations: 'disabled' });
      await b.screenshot({ path: join(outDir, 'nachos-b-playing-390.png'), fullPage: true, animations: 'disabled' });
    }
    if (!clicked) await a.waitForTimeout(120);
  }
  if (played.A < 15 || played.B < 15) throw new Error(`every card is played in a round (A ${played.A}, B ${played.B})`);
  if (!sawTrick) throw new Error('never saw a trick in progress');
  log(`round 1 over: A played ${played.A}, B played ${played.B}; fibonachos seen active: ${sawActive}`);

  // The round summary: raw spicy totals (all 15 spicy cards, 35 in all, were won), how each
  // was scored, and the running totals; the scores table has the round-1 column filled.
  for (const [who, p] of Object.entries(pages)) {
    const summary = p.locator(tid('round-summary'));
    await summary.waitFor();
    const rows = await summary.locator(tid('summary-row')).count();
    if (rows !== 3) throw new Error(`${who}: ${rows} summary rows`);
    const spicy = await summary.locator(tid('summary-spicy')).allTextContents();
    const sum = spicy.map(Number).reduce((x, y) => x + y, 0);
    if (sum !== 35) throw new Error(`${who}: the raw spicy totals add up to ${sum}, not 35`);
    await p.locator(tid('scores')).waitFor();
    const total = Number(await p.locator(tid('score-0')).textContent());
    const tablePoints = Number(await p.locator(`${tid('total-0')}`).textContent());
    if (total !== tablePoints) throw new Error(`${who}: totals disagree (${total} vs ${tablePoints})`);
    if (Number(await p.locator(tid('round-no')).textContent()) !== 2) throw new Error(`${who}: round 2 has not started`);
    // A click can still land in round 2 in the instant after the last card of round 1
    // (the loop then counted a 16th card): that card has left the new hand.
    const early = played[who] - 15;
    if (early > 1) throw new Error(`${who}: ${played[who]} cards played in a round of 15`);
    const hand = await p.locator(tid('hand-card')).count();
    if (hand !== 15 - early) throw new Error(`${who}: no new hand for round 2 (${hand} cards, ${early} played early)`);
    if ((await tricksDone(p)) !== 0) throw new Error(`${who}: the spicy piles were not cleared for round 2`);
  }
  await a.screenshot({ path: join(outDir, 'nachos-a-round-1280.png'), fullPage: true, animations: 'disabled' });
  await b.screenshot({ path: join(outDir, 'nachos-b-round-390.png'), fullPage: true, animations: 'disabled' });
  log(`screenshots in ${outDir}`);
});
