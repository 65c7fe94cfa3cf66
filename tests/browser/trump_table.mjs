// Browser test of the Trump table's feel: Ada plays a whole round against a bot with the
// keyboard only (the focus comes to her first playable card on her turn; Enter plays it);
// a card she may not play, pressed anyway, is refused in words; the card winning the trick
// so far is marked; each move is announced in the live region; her turn makes a sound
// until she mutes (remembered after a reload); cards move, except under reduced motion;
// every card carries its colour's initial; won tricks fly to their winner, except under
// reduced motion; the four-colour deck is chosen and remembered.
// Usage: node tests/browser/trump_table.mjs <base-url>

import { runBrowserTest } from './lib.mjs';

await runBrowserTest('a Trump round by keyboard, with feedback, sound and motion', async ({ player, tid, log, deadline }) => {
  const a = await player('Ada');
  const table = await a.evaluate(async () => {
    const r = await fetch('/api/tables', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ game: 'trump', seats: 2, bots: 'easy', options: { target: 144 } }) });
    return (await r.json()).table.id;
  });
  const base = a.url().replace(/#.*$/, '');
  await a.goto(`${base}#/table/${table}`);
  await a.locator(tid('start-button')).focus();
  await a.keyboard.press('Enter');
  await a.locator(tid('hand')).waitFor();
  log('started');
  // Colour is never the only cue: every card carries its colour's initial.
  const marks = await a.evaluate(() => [...document.querySelectorAll('[data-testid="hand"] button.card')]
    .map((c) => [c.dataset.colour, c.querySelector('[data-testid="colour-mark"]')?.textContent]));
  for (const [colour, mark] of marks) {
    if (mark !== colour[0].toUpperCase()) throw new Error(`a ${colour} card is marked ${mark}`);
  }
  if (new Set(marks.map(([, m]) => m)).size < 2) throw new Error(`one mark for every colour: ${JSON.stringify(marks)}`);

  let moves = 0;
  let refused = false;
  let markedWinner = false;
  while (await a.locator(tid('round-result')).count() === 0) {
    if (Date.now() > deadline - 20_000) throw new Error(`the round did not end (${moves} moves)`);
    const myTurn = await a.locator(`${tid('hand-card')}[data-playable="true"]`).count();
    if (!myTurn) {
      await a.waitForTimeout(50);
      continue;
    }
    // The trick on the table has exactly one card marked as winning so far.
    const onTable = await a.locator(tid('trick-card')).count();
    if (onTable > 0) {
      const marked = await a.locator(`${tid('trick-card')}[data-winning="true"]`).count();
      if (marked !== 1) throw new Error(`${marked} cards marked winning in a trick of ${onTable}`);
      markedWinner = true;
    }
    const blocked = a.locator(`${tid('hand-card')}[aria-disabled="true"]`);
    if (!refused && await blocked.count() > 0) {
      // A card that does not follow the led colour: the refusal says why, in words.
      await blocked.first().focus();
      await a.keyboard.press('Enter');
      await a.locator(tid('refusal')).filter({ hasText: 'You must follow' }).waitFor();
      refused = true;
      log(`refused: ${await a.locator(tid('refusal')).textContent()}`);
      await a.locator(`${tid('hand-card')}[data-playable="true"]`).first().focus();
    }
    // Keyboard only: the focus must already be on a playable card of the hand (moved
    // there on the turn, or left there by the arrow keys).
    const focused = await a.evaluate(() => document.activeElement?.dataset?.playable === 'true');
    if (!focused) {
      await a.locator(`${tid('hand-card')}[data-playable="true"]`).first().waitFor();
      // The page moves the focus once the frame is painted (web/app.js): allow it that.
      await a.waitForFunction(() => document.activeElement?.dataset?.playable === 'true', null, { timeout: 3000 }).catch(() => {});
      const again = await a.evaluate(() => document.activeElement?.dataset?.playable === 'true');
      if (!again) throw new Error(`move ${moves + 1}: the focus is not on a playable card but on ${await a.evaluate(() => document.activeElement?.outerHTML?.slice(0, 80))}`);
    }
    const before = await a.locator(tid('hand-card')).count();
    await a.keyboard.press('Enter');
    await a.waitForFunction((n) => document.querySelectorAll('[data-testid="hand-card"]').length < n
      || document.querySelector('[data-testid="round-result"]'), before);
    moves += 1;
  }
  log(`round over after ${moves} moves by keyboard`);
  // Won tricks travelled to their winner's seat.
  const flights = await a.evaluate(() => ({ ...(window.fibFlights || {}) }));
  if (!(flights.flown > 0)) throw new Error(`no trick flew to its winner: ${JSON.stringify(flights)}`);
  log(`tricks flown to their winner: ${flights.flown}`);
  if (!markedWinner) throw new Error('no trick was seen with its winning card marked');
  if (!refused) log('no unplayable card came up this round (nothing to refuse)');
  const said = await a.locator(tid('announcer')).textContent();
  if (!/played|won the trick|is over/.test(said)) throw new Error(`the live region says ${JSON.stringify(said)}`);

  // Sound: her turns were heard; muted, they are not, and the choice survives a reload.
  const sounds = await a.evaluate(() => ({ ...(window.fibSounds || {}) }));
  if (!(sounds.turn > 0)) throw new Error(`no turn sound: ${JSON.stringify(sounds)}`);
  await a.locator(tid('mute')).click();
  if (await a.locator(tid('mute')).getAttribute('aria-pressed') !== 'true') throw new Error('mute not pressed');
  await a.reload();
  await a.locator(tid('hand')).waitFor();
  if (await a.locator(tid('mute')).textContent() !== 'Sound off') throw new Error('mute forgotten after a reload');

  // Motion: a card on the table has arrived with an animation; none under reduced motion.
  const anim = () => a.evaluate(() => {
    const el = document.querySelector('.hand .card');
    return el ? getComputedStyle(el).animationName : null;
  });
  const moving = await anim();
  if (moving !== 'deal-in') throw new Error(`hand cards animate with ${moving}`);
  await a.emulateMedia({ reducedMotion: 'reduce' });
  const still = await anim();
  if (still !== 'none') throw new Error(`under reduced motion hand cards animate with ${still}`);
  // Under reduced motion a won trick stays where it is (counted as `still`, never flown).
  // (The reload above reset the counters; the round after the first is under way.)
  while (!(await a.evaluate(() => window.fibFlights?.still > 0))) {
    if (Date.now() > deadline - 5_000) throw new Error(`no trick was won under reduced motion: ${JSON.stringify(await a.evaluate(() => window.fibFlights))}`);
    const card = a.locator(`${tid('hand-card')}[data-playable="true"]`);
    if (await card.count()) {
      const before = await a.locator(tid('hand-card')).count();
      await card.first().click();
      await a.waitForFunction((n) => document.querySelectorAll('[data-testid="hand-card"]').length < n, before).catch(() => {});
    } else await a.waitForTimeout(50);
  }
  const afterReduce = await a.evaluate(() => window.fibFlights);
  if (afterReduce.flown !== 0) throw new Error(`a trick flew under reduced motion: ${JSON.stringify(afterReduce)}`);
  const scripted = await a.evaluate(() => [document.getElementById('flights')?.children.length ?? 0,
    document.getAnimations().filter((x) => !(x instanceof CSSAnimation) && !(x instanceof CSSTransition)).length]);
  if (scripted.some((n) => n > 0)) throw new Error(`under reduced motion cards still fly: ${JSON.stringify(scripted)}`);

  // The four-colour deck: chosen on the table page, applied at once, remembered.
  const border = () => a.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--red').trim());
  const classic = await border();
  await a.locator(tid('deck-colours')).selectOption('four');
  if (await a.evaluate(() => document.documentElement.dataset.deck) !== 'four') throw new Error('the deck choice was not applied');
  await a.reload();
  await a.locator(tid('hand')).waitFor();
  if (await a.evaluate(() => document.documentElement.dataset.deck) !== 'four') throw new Error('the deck choice was forgotten after a reload');
  if (await a.locator(tid('deck-colours')).inputValue() !== 'four') throw new Error('the deck select does not show the choice');
  const four = await border();
  if (four === classic) throw new Error(`the four-colour deck draws cards as the classic one (${four})`);
  log(`deck colours: classic ${classic}, four-colour ${four}`);
  if (refused === false) log('refusal not exercised');
});
