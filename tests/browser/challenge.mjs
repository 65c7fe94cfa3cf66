// Browser test of bot accounts and challenges (docs/protocol.md §2.26, §4.2):
// - Ada claims an account, turns it into a bot account (after a confirmation that says it
//   is for good), creates an API token (shown once, copyable), which then works as a
//   Bearer token, and revokes it;
// - Bob, on a phone, challenges a house bot from the lobby and lands on the started
//   table (no sideways scrolling at 390 px);
// - Cy challenges Dee from Dee's profile: Dee, in the lobby, declines (Cy is told), then
//   accepts the next one from the keyboard, and both land on the same started table.
// Usage: node tests/browser/challenge.mjs <base-url>

import { join } from 'node:path';
import { runBrowserTest, tid } from './lib.mjs';

const tableOf = (page) => page.url().split('#/table/')[1];
const info = (page, id) => page.evaluate(async (t) => (await fetch(`/api/tables/${t}`)).json(), id);
const onTable = async (page) => {
  await page.waitForURL((u) => /#\/table\/[0-9a-f-]{36}$/.test(u.hash));
  await page.locator(tid('table-page')).waitFor();
  return tableOf(page);
};
/** Waits until the lobby's socket has sent its list (challenges reach it from then on). */
const lobbyLive = (page) => page.waitForFunction(() => {
  const list = document.querySelector('[data-testid="table-list"]');
  return list && !list.textContent.includes('Loading') && document.querySelector('[data-testid="challenge-slot"]');
});
const noSideways = async (page, where) => {
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  if (w > 390) throw new Error(`${where}: the page is ${w} px wide on a 390 px phone`);
};

await runBrowserTest('bot account and tokens; challenges to a house bot and to a person', async ({ base, player, log, outDir }) => {
  // --- A bot account and its token ------------------------------------------------------
  const a = await player('Ada');
  await a.locator(tid('me-name')).click();
  await a.locator(tid('claim-username')).fill('ada_bot');
  await a.locator(tid('claim-password')).fill('four fibonacci hearts');
  await a.locator(tid('claim-submit')).click();
  await a.locator(tid('account-username')).waitFor();
  await a.locator(tid('bot-start')).click();
  await a.locator(tid('bot-confirm-box')).filter({ hasText: 'cannot be undone' }).waitFor();
  if (!(await a.locator(tid('bot-confirm')).isDisabled())) throw new Error('the bot confirmation is enabled before it is ticked');
  await a.locator(tid('bot-sure')).check();
  await a.locator(tid('bot-confirm')).click();
  await a.locator(`${tid('bot-section')}[data-bot="true"]`).waitFor();
  await a.locator(tid('no-tokens')).waitFor();
  const account = await a.evaluate(async () => (await fetch('/api/account')).json());
  if (account.bot !== true) throw new Error(`not a bot account: ${JSON.stringify(account)}`);
  log('Ada is a bot account');
  await a.locator(tid('token-create')).click();
  const token = await a.locator(tid('token-value')).inputValue();
  if (token.length < 20) throw new Error(`token ${token}`);
  await a.locator(tid('token-copy')).click();
  await a.locator(tid('token-copied')).filter({ hasText: /./ }).waitFor();
  await a.screenshot({ path: join(outDir, 'bot-token.png'), fullPage: true });
  // The token signs a program in as Ada.
  const me = await (await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}` } })).json();
  if (me.id !== account.player.id) throw new Error(`the token is ${JSON.stringify(me)}`);
  await a.locator(tid('token-done')).click();
  await a.locator(tid('token')).waitFor();
  if ((await a.locator(tid('token')).count()) !== 1) throw new Error('one token is listed');
  await a.locator(tid('token-revoke')).click();
  await a.locator(tid('no-tokens')).waitFor();
  const after = await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}` } });
  if (after.status !== 401) throw new Error(`a revoked token answers ${after.status}`);
  log('token made, used and revoked');

  // --- A house bot, from the lobby, on a phone ------------------------------------------
  const b = await player('Bob', { phone: true });
  await lobbyLive(b);
  await noSideways(b, 'lobby');
  // The form comes on demand (web/challenge.js is not part of the lobby's first load).
  await b.locator(tid('challenge-open')).click();
  await b.locator(tid('challenge-form')).scrollIntoViewIfNeeded();
  await b.screenshot({ path: join(outDir, 'challenge-house-phone.png') });
  await b.locator(tid('ch-to')).selectOption('house:easy');
  await b.locator(tid('ch-game')).selectOption('trump');
  await b.locator(tid('ch-submit')).click();
  const t1 = await info(b, await onTable(b));
  if (t1.status !== 'playing' || t1.seats[1]?.kind !== 'bot' || t1.seats[1]?.level !== 'easy') {
    throw new Error(`house challenge table: ${JSON.stringify(t1)}`);
  }
  await noSideways(b, 'table');
  log(`Bob plays the easy house bot at ${t1.id}`);

  // --- Two people: from a profile, declined, then accepted -------------------------------
  const d = await player('Dee');
  const deeId = await d.evaluate(async () => (await (await fetch('/api/me')).json()).id);
  await lobbyLive(d);
  const c = await player('Cy');
  const cyId = await c.evaluate(async () => (await (await fetch('/api/me')).json()).id);
  await c.goto(`${base}/#/players/${deeId}`);
  await c.locator(tid('profile-challenge')).click();
  const send = async () => {
    await c.locator(tid('challenge-player-form')).waitFor();
    for (let i = 0; i < 20; i += 1) {
      await c.locator(tid('ch-submit')).click();
      try {
        await c.locator(tid('challenge-outgoing')).waitFor({ timeout: 1000 });
        return;
      } catch {
        // The page's lobby socket was not open yet.
      }
    }
    throw new Error('the challenge was never sent');
  };
  await send();
  await d.locator(tid('challenge-incoming')).filter({ hasText: 'Cy' }).waitFor();
  await d.locator(tid('challenge-decline')).click();
  await c.locator(tid('challenge-result')).filter({ hasText: 'was declined' }).waitFor();
  log('declined, and Cy was told');
  await c.locator(tid('challenge-dismiss')).click();
  await send();
  const accept = d.locator(tid('challenge-accept'));
  await accept.waitFor();
  await d.screenshot({ path: join(outDir, 'challenge-incoming.png') });
  await c.screenshot({ path: join(outDir, 'challenge-outgoing.png') });
  await accept.focus();
  await d.keyboard.press('Enter');
  const [tc, td] = await Promise.all([onTable(c), onTable(d)]);
  if (tc !== td) throw new Error(`Cy is at ${tc}, Dee at ${td}`);
  const t2 = await info(c, tc);
  const ids = t2.seats.map((s) => s.id);
  if (t2.status !== 'playing' || ids[0] !== cyId || ids[1] !== deeId) throw new Error(`challenge table: ${JSON.stringify(t2)}`);
  log(`Cy and Dee play at ${tc}`);
});
