// Browser test of accounts: Ada (a guest) opens her account page from her name, is told a
// weak password why it is refused, claims "ada_l"; on a second browser she signs in with
// it from the welcome page and is the same player; back on the first, the device list
// shows both, and signing the second out sends that browser back to the welcome page.
// Usage: node tests/browser/account.mjs <base-url>

import { runBrowserTest } from './lib.mjs';

await runBrowserTest('claim, sign in elsewhere, sign that device out', async ({ player, tid, log }) => {
  const a = await player('Ada');
  const id = await a.evaluate(async () => (await (await fetch('/api/me')).json()).id);
  await a.locator(tid('me-name')).click();
  await a.locator(tid('claim-form')).waitFor();
  await a.locator(tid('claim-username')).fill('ada_l');
  await a.locator(tid('claim-password')).fill('ada_l-1234567');
  await a.locator(tid('claim-submit')).click();
  await a.locator(tid('account-error')).filter({ hasText: 'username' }).waitFor();
  await a.locator(tid('claim-password')).fill('four fibonacci hearts');
  await a.locator(tid('claim-submit')).click();
  await a.locator(tid('account-username')).filter({ hasText: 'ada_l' }).waitFor();
  log('claimed');

  const phone = await player('phone', { phone: true, guest: false });
  await phone.locator(tid('signin-username')).fill('ADA_L');
  await phone.locator(tid('signin-password')).fill('wrong password here');
  await phone.locator(tid('signin-submit')).click();
  await phone.locator(tid('signin-error')).filter({ hasText: 'username or the password' }).waitFor();
  await phone.locator(tid('signin-password')).fill('four fibonacci hearts');
  await phone.locator(tid('signin-submit')).click();
  await phone.locator(tid('me-name')).filter({ hasText: 'Ada' }).waitFor();
  await phone.locator(tid('quickplay')).waitFor();
  const same = await phone.evaluate(async () => (await (await fetch('/api/me')).json()).id);
  if (same !== id) throw new Error(`signed in as ${same}, not ${id}`);
  log('signed in on the phone');

  await a.reload();
  await a.locator(tid('device')).nth(1).waitFor();
  const n = await a.locator(tid('device')).count();
  if (n !== 2) throw new Error(`${n} devices listed`);
  await a.locator(tid('device-signout')).click();
  await a.locator(tid('device')).nth(1).waitFor({ state: 'detached' });
  // The phone's lobby socket is closed (4001): it is nobody now.
  await phone.locator(tid('name-input')).waitFor();
  if (await phone.locator(tid('me-name')).count()) throw new Error('the phone still shows a name');
  const status = await phone.evaluate(async () => (await fetch('/api/me')).status);
  if (status !== 401) throw new Error(`the phone's token answers ${status}`);
});
