// Browser test of online play: Ada creates a Blitz table (a clock per move), Bob joins and
// Ada starts; both pages show the players bar with the running clock counting down, then
// Bob's page goes to the background (shown away to Ada) and closes (shown disconnected).
// Usage: node tests/browser/online.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest } from './lib.mjs';

await runBrowserTest('clocks and presence at a live table', async ({ player, tid, log, outDir }) => {
  const a = await player('Ada');
  const b = await player('Bob', { phone: true });
  await a.locator(tid('create-game')).selectOption('trump');
  await a.locator(tid('create-seats')).selectOption('2');
  await a.locator(tid('create-bots')).uncheck();
  await a.locator(tid('create-pace')).selectOption('blitz');
  // The game's own option: Trump's race target.
  await a.locator(tid('create-target')).selectOption('55');
  await a.locator(tid('create-submit')).click();
  await a.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  const table = a.url();
  await b.goto(table);
  await b.locator(tid('seat-join-1')).click();
  await a.locator(tid('seat-row-1')).filter({ hasText: 'Bob' }).waitFor();
  await a.locator(tid('start-button')).click();
  await a.locator(tid('players-bar')).waitFor();
  await b.locator(tid('players-bar')).waitFor();
  log('match started');
  const target = await a.evaluate(async (u) => (await (await fetch(`/api/tables/${u.split('#/table/')[1]}`)).json()).options.target, table);
  if (target !== 55) throw new Error(`the table races to ${target}, not the 55 chosen`);

  // The seat on turn has a running clock (10 s a move + 30 s bank) that counts down.
  const running = a.locator(`${tid('players-bar')} .clock.running`);
  await running.waitFor();
  const first = await running.textContent();
  if (!/^0:[0-4]\d$/.test(first ?? '')) throw new Error(`a running clock shows ${first}`);
  await a.waitForTimeout(1500);
  const later = await running.textContent();
  if (later === first) throw new Error(`the clock did not count down: ${first} then ${later}`);
  log(`clock ${first} → ${later}`);
  await a.screenshot({ path: join(outDir, 'online-clock.png'), fullPage: true });

  // Bob's page goes to the background: Ada sees him away, then gone when he closes it.
  await a.locator(`${tid('player-1')}[data-presence="connected"]`).waitFor();
  // Ada's keyboard focus sits on the rules link; the update must not take it away (the page
  // is patched, not rebuilt).
  await a.locator(tid('rules-link')).focus();
  await a.evaluate(() => { window.focusedBefore = document.activeElement; });
  await b.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await a.locator(`${tid('player-1')}[data-presence="away"]`).waitFor();
  log('Bob shown away');
  const kept = await a.evaluate(() => document.activeElement === window.focusedBefore
    && document.activeElement?.dataset.testid === 'rules-link');
  if (!kept) throw new Error('a presence update took the keyboard focus away');
  await b.context().close();
  await a.locator(`${tid('player-1')}[data-presence="disconnected"]`).waitFor();
  log('Bob shown disconnected');
  await a.screenshot({ path: join(outDir, 'online-presence.png'), fullPage: true });
});
