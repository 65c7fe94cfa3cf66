// Browser test of accounts: Ada (a guest) opens her account page from her name, is told a
// weak password why it is refused, claims "ada_l"; on a second browser she signs in with
// it from the welcome page and is the same player; back on the first, the device list
// shows both, and signing the second out sends that browser back to the welcome page.
// Usage: node tests/browser/account.mjs <base-url>

import { runBrowserTest, tid } from './lib.mjs';

/** What makes two fields look alike: compared between the fields of one form. */
const FIELD_LOOK = ['border-top-style', 'border-top-width', 'border-top-color', 'border-left-width',
  'border-top-left-radius', 'padding-top', 'padding-left', 'font-family', 'font-size',
  'background-color', 'height'];

/** Fails unless the fields `a` and `b` of `page` have the same look and the same width. */
async function sameLook(page, a, b, where) {
  const [x, y] = await Promise.all([a, b].map((id) => page.locator(tid(id)).evaluate((e, props) => {
    const cs = getComputedStyle(e);
    return { width: e.getBoundingClientRect().width, look: Object.fromEntries(props.map((p) => [p, cs.getPropertyValue(p)])) };
  }, FIELD_LOOK)));
  const differ = FIELD_LOOK.filter((p) => x.look[p] !== y.look[p]).map((p) => `${p} ${x.look[p]} vs ${y.look[p]}`);
  if (Math.abs(x.width - y.width) > 0.5) differ.push(`width ${x.width} vs ${y.width}`);
  if (differ.length) throw new Error(`${where}: ${b} does not look like ${a}: ${differ.join('; ')}`);
}

await runBrowserTest('claim, sign in elsewhere, sign that device out', async ({ player, log }) => {
  const a = await player('Ada');
  const id = await a.evaluate(async () => (await (await fetch('/api/me')).json()).id);
  await a.locator(tid('me-name')).click();
  await a.locator(tid('claim-form')).waitFor();
  await sameLook(a, 'claim-username', 'claim-password', 'claim form');
  await a.locator(tid('claim-username')).fill('ada_l');
  await a.locator(tid('claim-password')).fill('ada_l-1234567');
  await a.locator(tid('claim-submit')).click();
  await a.locator(tid('account-error')).filter({ hasText: 'username' }).waitFor();
  await a.locator(tid('claim-password')).fill('four fibonacci hearts');
  await a.locator(tid('claim-submit')).click();
  await a.locator(tid('account-username')).filter({ hasText: 'ada_l' }).waitFor();
  log('claimed');

  // Issue #33, item 8: the first screen a newcomer sees on a phone. The password field
  // looks like the username field above it (computed style and width), and no tall empty
  // gap parts the two cards.
  const phone = await player('phone', { phone: true, guest: false });
  await sameLook(phone, 'signin-username', 'signin-password', 'welcome page on a phone');
  const gap = await phone.evaluate(() => document.querySelector('[data-testid="account-signin-form"]').getBoundingClientRect().top
    - document.querySelector('[data-testid="signin-form"]').getBoundingClientRect().bottom);
  if (!(gap >= 0 && gap <= 24)) throw new Error(`welcome page on a phone: ${gap} px between the two cards, not 0 to 24`);
  const form = await phone.locator(tid('account-signin-form')).boundingBox();
  if (form.y + form.height > 844) throw new Error(`welcome page on a phone: the sign-in card ends at ${form.y + form.height}, below the first screen`);
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
