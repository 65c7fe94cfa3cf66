// Shared harness of the browser tests: parses the base URL, launches Debian's Chromium
// with the flags this machine needs, gives each test signed-in players (one browser
// context each), enforces a total time limit, saves screenshots on failure, and prints the
// closing line `browser: N passed, N failed` that the suite's runner reads.
// Usage in a test script:
//   import { runBrowserTest } from './lib.mjs';
//   await runBrowserTest('what it shows', async ({ player, tid, log, outDir }) => { ... });

import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const tid = (id) => `[data-testid="${id}"]`;

/**
 * POSTs `body` as JSON to `url` from `page` (its cookie), and resolves with the answer's
 * JSON; a refusal throws with its status and text.
 */
export const postJson = (page, url, body) => page.evaluate(async ([u, bd]) => {
  const r = await fetch(u, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bd) });
  if (!r.ok) throw new Error(`${u}: ${r.status} ${await r.text()}`);
  return r.json();
}, [url, body]);

/**
 * Plays table `id` to its end from `page`, through a WebSocket of the page itself (its
 * cookie), always sending the first legal action. Resolves when the match is finished.
 */
export const playOut = (page, id) => page.evaluate((table) => new Promise((resolve, reject) => {
  const ws = new WebSocket(`${location.origin.replace('http', 'ws')}/ws/table/${table}?updates=full`);
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type !== 'state') return;
    if (m.table.status === 'finished') { ws.close(); resolve(); return; }
    if (m.legal && m.legal.length) ws.send(JSON.stringify({ type: 'act', version: m.version, action: m.legal[0] }));
  };
  ws.onerror = () => reject(new Error('socket error'));
  setTimeout(() => reject(new Error('the match did not finish')), 60_000);
}), id);
export const outDir = join(dirname(fileURLToPath(import.meta.url)), 'test-results');

const axeSource = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'node_modules/axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core on `page` as it is now and returns its serious and critical violations,
 * each as `rule: target (summary)`. The script goes in through the DevTools protocol,
 * which the page's Content-Security-Policy does not govern.
 */
export async function axeSerious(page) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')} (${n.failureSummary?.split('\n')[1]?.trim() ?? v.help})`));
}

const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Runs `body` and exits the process with the result. Never returns. */
export async function runBrowserTest(title, body) {
  const base = (process.argv[2] || process.env.BASE_URL || '').replace(/\/+$/, '');
  const totalMs = Number(process.env.BROWSER_TEST_TIMEOUT_MS || 120_000);
  const started = Date.now();
  const log = (...a) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);
  const finish = (ok) => {
    console.log(ok ? 'browser: 1 passed, 0 failed' : 'browser: 0 passed, 1 failed');
    process.exit(ok ? 0 : 1);
  };
  if (!base) {
    console.error(`usage: node ${process.argv[1]} <base-url>`);
    finish(false);
  }
  log(`browser test: ${title}`);
  mkdirSync(outDir, { recursive: true });
  const timer = setTimeout(() => {
    console.error(`browser test: timed out after ${totalMs / 1000} s`);
    finish(false);
  }, totalMs);

  let browser;
  const pages = {};
  const pageErrors = [];
  /**
   * A new player in its own context, signed in with `name` as a guest. Phone-sized if
   * `phone`. With `guest: false` the page stays on the welcome page, signed in as nobody.
   */
  const player = async (name, { phone = false, guest = true } = {}) => {
    const ctx = await browser.newContext(phone
      ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }
      : { viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    pages[name] = page;
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (e) => pageErrors.push(`${name}: ${e.message}`));
    // The 401 of GET /api/me before signing in is expected; other console errors are shown.
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      log(`${name} console error: ${m.text()}`);
      // The Content-Security-Policy must never have to refuse anything the client does.
      if (/Content Security Policy|Refused to (load|execute|apply|connect)/.test(m.text())) pageErrors.push(`${name}: ${m.text()}`);
    });
    await page.goto(base + '/');
    if (!guest) {
      await page.locator(tid('name-input')).waitFor();
      return page;
    }
    await page.locator(tid('name-input')).fill(name);
    await page.locator(tid('name-submit')).click();
    await page.locator(tid('me-name')).filter({ hasText: name }).waitFor();
    await page.locator(tid('create-form')).waitFor();
    log(`${name} signed in`);
    return page;
  };

  try {
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ARGS });
    const deadline = started + totalMs - 10_000;
    await body({ base, player, tid, log, outDir, deadline });
    if (pageErrors.length) throw new Error(`uncaught errors in the page: ${pageErrors.join('; ')}`);
    clearTimeout(timer);
    await browser.close();
    finish(true);
  } catch (e) {
    clearTimeout(timer);
    console.error(`browser test failed: ${e?.stack ?? e}`);
    for (const [who, p] of Object.entries(pages)) {
      const file = `failure-${who.replace(/[^A-Za-z0-9]/g, '_')}.png`;
      await p.screenshot({ path: join(outDir, file), fullPage: true }).catch(() => {});
    }
    await browser?.close().catch(() => {});
    finish(false);
  }
}
