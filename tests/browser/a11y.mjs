// Accessibility sweep: axe-core must find no serious or critical issue on any page, at
// desktop and at phone size (390×844): the welcome page, the lobby, every rules page, a
// table of every game being played, the leaderboard, the daily deal, my matches, the
// account page, a profile and a replay. Every page has exactly one h1, and no page
// scrolls sideways at phone size. Hand cards animate at desktop size and do not under
// reduced motion (asked for in the phone pass). The phone pass uses the four-colour deck.
// Usage: node tests/browser/a11y.mjs <base-url>

import { axeSerious, playOut, runBrowserTest } from './lib.mjs';

await runBrowserTest('axe finds no serious issue, desktop and phone', async ({ player, tid, log }) => {
  const problems = [];
  for (const phone of [false, true]) {
    const size = phone ? 'phone' : 'desktop';
    const welcome = await player(`welcome-${size}`, { phone, guest: false });
    const check = async (page, what) => {
      // Let late renders (fonts, lists filling in) settle.
      await page.waitForTimeout(150);
      for (const v of await axeSerious(page)) problems.push(`${size} ${what}: ${v}`);
      const h1 = await page.locator('h1').count();
      if (h1 !== 1) problems.push(`${size} ${what}: ${h1} h1 elements`);
      if (phone) {
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        if (wide > 0) problems.push(`${size} ${what}: scrolls sideways by ${wide} px`);
        // Touch targets: at least 44 px one way and 36 px the other (links inside a
        // sentence are exempt, as in WCAG 2.5.8).
        const small = await page.evaluate(() => [...document.querySelectorAll('button, .btn, nav a, select, input:not([type="checkbox"]):not([type="range"]), .tab')]
          .filter((e) => {
            const r = e.getBoundingClientRect();
            if (r.width === 0 || r.height === 0 || e.closest('[hidden]')) return false;
            return Math.max(r.width, r.height) < 44 || Math.min(r.width, r.height) < 36;
          })
          .map((e) => `${e.tagName.toLowerCase()}[${e.dataset.testid || e.textContent.trim().slice(0, 20)}] ${Math.round(e.getBoundingClientRect().width)}×${Math.round(e.getBoundingClientRect().height)}`));
        if (small.length) problems.push(`${size} ${what}: small touch targets: ${small.slice(0, 6).join(', ')}`);
        // At a table, the player's hand starts in the first screen.
        const hand = await page.evaluate(() => {
          const e = document.querySelector('[data-testid="hand"], [data-testid="rm-hand"], .hand, .rm-hand, .ff-hand');
          return e ? Math.round(e.getBoundingClientRect().top + scrollY) : null;
        });
        if (what.startsWith('table ') && (hand === null || hand >= 844)) problems.push(`${size} ${what}: the hand starts at ${hand} px, below the first screen`);
      }
    };
    await check(welcome, 'welcome');
    const p = await player(`Ada-${size}`, { phone });
    if (phone) {
      await p.emulateMedia({ reducedMotion: 'reduce' });
      // The phone pass sweeps the four-colour deck (its inks and swatches), desktop the classic.
      await p.evaluate(() => localStorage.setItem('fib.deck', 'four'));
      await p.reload();
      if (await p.evaluate(() => document.documentElement.dataset.deck) !== 'four') problems.push('phone: the four-colour deck is not applied');
    }
    const base = p.url().replace(/#.*$/, '');
    const go = async (hash, ready) => {
      await p.goto(`${base}#${hash}`);
      await p.locator(ready).first().waitFor();
    };
    await check(p, 'lobby');
    for (const kind of ['trump', 'rummy', 'fibfib', 'nachos']) {
      await go(`/rules/${kind}`, 'h1');
      await check(p, `rules ${kind}`);
    }
    // A table of each game being played against bots (Solitaire is rummy with one seat).
    const games = [['trump', 3], ['rummy', 2], ['rummy', 1], ['fibfib', 2], ['nachos', 3]];
    let finished = null;
    for (const [game, seats] of games) {
      const id = await p.evaluate(async ([g, n]) => {
        const r = await fetch('/api/tables', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ game: g, seats: n, bots: 'easy' }) });
        const t = (await r.json()).table.id;
        await fetch(`/api/tables/${t}/start`, { method: 'POST' });
        return t;
      }, [game, seats]);
      await go(`/table/${id}`, tid('players-bar'));
      await check(p, `table ${game}/${seats}`);
      // Cards move on arrival; under reduced motion (the phone pass asks for it) nothing does.
      const anim = await p.evaluate(() => {
        const c = document.querySelector('[data-testid="hand"] .card, [data-testid="hand"] .ncard, [data-testid="hand"] .ff-card, [data-testid="hand"] .rc');
        return c ? getComputedStyle(c).animationName : null;
      });
      if (phone ? anim !== 'none' : (anim === null || anim === 'none')) problems.push(`${size} table ${game}/${seats}: hand cards animate with ${anim}`);
      if (game === 'fibfib') {
        await playOut(p, id);
        finished = id;
      }
    }
    await go(`/table/${finished}`, tid('rematch-panel'));
    await check(p, 'finished table');
    await go(`/replay/${finished}`, tid('replay'));
    await check(p, 'replay');
    await go('/leaderboard/trump', 'h1');
    await check(p, 'leaderboard');
    await go('/daily/21', tid('daily-play'));
    await check(p, 'daily');
    await go('/matches', tid('matches'));
    await check(p, 'my matches');
    await go('/account', tid('devices'));
    await check(p, 'account');
    const me = await p.evaluate(async () => (await (await fetch('/api/me')).json()).id);
    await go(`/players/${me}`, tid('profile'));
    await check(p, 'profile');
    log(`${size}: checked`);
  }
  if (problems.length) throw new Error(`accessibility problems:\n  ${problems.join('\n  ')}`);
});
