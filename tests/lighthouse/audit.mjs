// One Lighthouse audit (scripts/lighthouse.sh): the mobile preset with real (devtools)
// throttling, in a Chromium whose cookie jar holds the visitor's session when a token is
// given. A real cookie, not an extra request header: an extra header does not reach the
// WebSocket handshake, so the table page would open its socket as a stranger's and be
// audited as a spectator's page.
//
//   node tests/lighthouse/audit.mjs <url> <report.json> [token]
import { writeFileSync } from 'node:fs';
import lighthouse from 'lighthouse';
import puppeteer from 'puppeteer-core';

const [url, out, token] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  if (token) {
    await browser.setCookie({ name: 'fib_token', value: token, url: new URL(url).origin, path: '/', httpOnly: true, sameSite: 'Lax' });
  }
  const result = await lighthouse(url, {
    logLevel: 'error',
    output: 'json',
    throttlingMethod: 'devtools',
    onlyCategories: ['performance', 'accessibility', 'best-practices', 'seo'],
  }, undefined, page);
  writeFileSync(out, result.report);
} finally {
  await browser.close();
}
