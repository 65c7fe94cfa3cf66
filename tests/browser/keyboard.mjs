// Keyboard and screen-reader checks that an accessibility walk found failing (the axe sweep,
// a11y.mjs, cannot see them: they are about what happens over time):
// - Solitaire from the keyboard: on the player's turn the focus is on the turn's control
//   (not on the page's body) and stays somewhere useful after each move, and the announcer
//   says the move in words (the rummy games said nothing);
// - the chat list is no live region (drawn anew at every line, it made a screen reader
//   read the whole chat again); the newest line alone is said;
// - quick play: the pressed button's replacement takes the focus, and the countdown is no
//   live region (it spoke every second);
// - the page's title after leaving a table is not "● Your turn";
// - the lobby's row buttons say which table they act on;
// - a move to another page names it (title, aria-current, announcer);
// - a low clock is marked by more than colour, and the player's own is said once;
// - Trump's seat plates say their marks (dealer, cards in hand, the symbol) in words;
// - Trump's and Fibonachos' round and match ends are said with their scores;
// - the tournament form and a four-seat Trump table reflow at 320 px (no sideways
//   scrolling).
// Usage: node tests/browser/keyboard.mjs <base-url>

import { runBrowserTest } from './lib.mjs';

await runBrowserTest('keyboard and screen reader', async ({ player, tid, log }) => {
  const p = await player('Keys');
  const base = p.url().replace(/#.*$/, '');
  const focused = () => p.evaluate(() => {
    const e = document.activeElement;
    return !e || e === document.body ? 'BODY' : (e.dataset.testid || e.tagName);
  });
  const until = async (what, f, ms = 10_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await p.waitForTimeout(100);
    }
  };

  // Quick play: the countdown is not live; the focus follows the buttons.
  await p.locator(tid('quickplay')).waitFor();
  for (const id of ['qp-status', 'qp-info']) {
    const live = await p.locator(tid(id)).getAttribute('aria-live');
    if (live) throw new Error(`${id} is a live region (aria-live=${live})`);
  }
  await p.locator(tid('qp-play')).focus();
  await p.keyboard.press('Enter');
  await p.locator(tid('qp-status')).filter({ hasText: 'Looking for players' }).waitFor();
  await until('the focus on "Leave the queue"', async () => (await focused()) === 'qp-leave');
  await until('the queue announced', async () => /Looking for players/.test(await p.locator(tid('qp-announcer')).textContent()));
  await p.keyboard.press('Enter');
  await until('the focus back on "Play now"', async () => (await focused()) === 'qp-play');
  await until('the leaving announced', async () => /no longer in the queue/.test(await p.locator(tid('qp-announcer')).textContent()));
  log('quick play: focus and announcements');

  // Solitaire 8, created and played from the keyboard.
  await p.locator(tid('create-game')).selectOption('rummy');
  await p.locator(tid('create-seats')).selectOption('1');
  await p.locator(tid('create-target')).selectOption('8');
  await p.locator(tid('create-submit')).focus();
  await p.keyboard.press('Enter');
  await p.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  await p.locator(tid('start-button')).focus();
  await p.keyboard.press('Enter');
  await p.locator(tid('hand')).waitFor();
  // The start button is gone: the focus goes to the turn's control, "Draw 2".
  await until('the focus on "Draw 2"', async () => (await focused()) === 'act-draw-stock');
  const hand = await p.locator(tid('hand-card')).count();
  await p.keyboard.press('Enter');
  await until('the draw', async () => (await p.locator(tid('hand-card')).count()) === hand + 2);
  await until('the draw announced', async () => /You drew 2 from the stock/.test(await p.locator(tid('announcer')).textContent()));
  // The button pressed is gone with the draw: the focus is on the turn's next control (a
  // main button such as the opening's, else a card to choose), not on the page's body.
  const next = await until('the focus after the draw', async () => {
    const f = await focused();
    return f !== 'BODY' && f !== 'act-draw-stock' ? f : null;
  });
  if (!['hand-card', 'act-open', 'act-build-open'].includes(next)) throw new Error(`after the draw the focus is on ${next}`);
  log(`solitaire: focus (then on ${next}) and announcement after a draw`);

  // Chat: not a live list; the newest line is said.
  const live = await p.locator(tid('chat-lines')).getAttribute('aria-live');
  if (live) throw new Error(`the chat list is a live region (aria-live=${live})`);
  for (const text of ['first line', 'second line']) {
    await p.locator(tid('chat-input')).fill(text);
    await p.locator(tid('chat-input')).press('Enter');
    await p.locator(`${tid('chat-line')}:has-text("${text}")`).waitFor();
  }
  const said = await until('the newest line said', async () => {
    const t = await p.locator(tid('chat-announcer')).textContent();
    return /second line/.test(t) ? t : null;
  });
  if (/first line/.test(said)) throw new Error(`the chat announcer repeats earlier lines: ${said}`);
  log(`chat: "${said}"`);

  // Away from the table: the title is no longer the table's.
  if (!/Your turn/.test(await p.title())) throw new Error(`the table's title is ${await p.title()}`);
  await p.goto(`${base}#/`);
  await p.locator(tid('quickplay')).waitFor();
  await p.waitForTimeout(1000);
  if (/Your turn/.test(await p.title())) throw new Error(`the lobby's title is still "${await p.title()}"`);
  log('title reset after leaving the table');

  // The lobby's row buttons are alike from row to row ("Resume", "Join", "Watch"): each
  // says which table it acts on (the game and who sits there).
  const resume = p.locator(tid('table-open')).first();
  await resume.waitFor();
  const label = await resume.getAttribute('aria-label');
  if (!/^Resume the .+ table of Keys/.test(label ?? '')) throw new Error(`the lobby's "Resume" is named "${label}"`);
  log(`lobby row button: "${label}"`);

  // A round's and a match's end are said with their scores (the announcer said only "The
  // round is over"), in Trump and in Fibonachos: their modules' own `describe`.
  const words = await p.evaluate(async () => {
    const name = (s) => ['Ada', 'Bot 2', 'Bot 3'][s];
    const trump = await import('/games/trump.js');
    const nachos = await import('/games/nachos.js');
    return [
      trump.describe([{ type: 'round_ended', round: 2, points: [12, 8], totals: [40, 33] }], name, 1),
      trump.describe([{ type: 'match_ended', winners: [0], scores: [150, 96] }], name, 1),
      nachos.describe([{ type: 'round_ended', round: 3, results: [], totals: [9, -2, 4] }], name, 0),
      nachos.describe([{ type: 'match_ended', winners: [0], totals: [9, -2, 4] }], name, 0),
    ];
  });
  const want = [
    'Round 2 is over. Points: Ada 12 (total 40), You 8 (total 33).',
    'The match is over: Ada wins. Final scores: Ada 150, You 96.',
    'Round 3 is over. Totals: You 9, Bot 2 -2, Bot 3 4.',
    'The match is over: You win. Final scores: You 9, Bot 2 -2, Bot 3 4.',
  ];
  for (const [i, w] of want.entries()) {
    if (words[i] !== w) throw new Error(`said "${words[i]}", not "${w}"`);
  }
  log('round and match ends said with their scores');

  // A clock under 10 s is marked by a sign as well as its colour, and the player's own is
  // said once (the clocks said nothing; the low time was red alone).
  const clocks = await p.evaluate(async () => {
    const { tickClocks } = await import('/online.js');
    const root = document.createElement('div');
    root.innerHTML = '<div class="player-chip me"><span class="clock running" data-left="9000"></span></div>'
      + '<div class="player-chip"><span class="clock running" data-left="5000"></span></div>';
    const said = [];
    const t0 = performance.now();
    tickClocks(root, t0, (x) => said.push(x));
    tickClocks(root, t0, (x) => said.push(x));
    return { texts: [...root.querySelectorAll('.clock')].map((e) => e.textContent), said };
  });
  if (clocks.texts.join('|') !== '⚠ 0:09|⚠ 0:05') throw new Error(`low clocks show ${clocks.texts.join(', ')}`);
  if (clocks.said.join('|') !== 'Your clock: 9 seconds left.') throw new Error(`the low clock was said as [${clocks.said.join(' | ')}]`);
  log(`low clocks: ${clocks.texts.join(', ')}; said "${clocks.said[0]}"`);

  // A move to another page: the window's title names it, its link in the navigation is
  // marked current, and a screen reader hears the page's name (nothing else is said: the
  // focus stays on the link).
  await p.locator('nav a[data-page="leaderboard"]').focus();
  await p.keyboard.press('Enter');
  await p.locator('h1', { hasText: 'Leaderboard' }).waitFor();
  await until('the title', async () => /^Leaderboard: .+ · Fibonacci Cards$/.test(await p.title()));
  const current = await p.evaluate(() => [...document.querySelectorAll('nav a[aria-current="page"]')].map((a) => a.dataset.page));
  if (current.join() !== 'leaderboard') throw new Error(`the current page in the navigation is [${current}]`);
  await until('the page announced', async () => /^Leaderboard: /.test(await p.locator(tid('page-announcer')).textContent()));
  log(`page change: title "${await p.title()}", announced`);

  // Reflow (WCAG 1.4.10): the tournament form at 320 px wide scrolls no sideways.
  await p.setViewportSize({ width: 320, height: 700 });
  await p.goto(`${base}#/tournaments`);
  await p.locator(tid('tournament-form')).waitFor();
  await p.waitForTimeout(200);
  const wide = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  if (wide > 0) throw new Error(`the tournaments page at 320 px scrolls sideways by ${wide} px`);
  log('tournaments page at 320 px');

  // The same for a four-seat Trump table being played (its four seat plates in one row did
  // not fit their figures).
  await p.goto(`${base}#/`);
  await p.locator(tid('create-game')).selectOption('trump');
  await p.locator(tid('create-seats')).selectOption('4');
  await p.locator(tid('create-submit')).click();
  await p.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  await p.locator(tid('start-button')).click();
  await p.locator(tid('hand')).waitFor();
  await p.waitForTimeout(300);
  const tableWide = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  if (tableWide > 0) throw new Error(`a four-seat Trump table at 320 px scrolls sideways by ${tableWide} px`);
  log('four-seat Trump table at 320 px');

  // Its seat plates' marks are said in words: what a screen reader gets is the text with
  // the marks hidden from it (aria-hidden) taken out.
  const heard = await p.evaluate(() => [...document.querySelectorAll('.seat-plate')].map((e) => {
    const c = e.cloneNode(true);
    for (const x of c.querySelectorAll('[aria-hidden="true"]')) x.remove();
    return c.textContent.replace(/\s+/g, ' ').trim();
  }));
  if (heard.length !== 4 || !heard.every((t) => /cards in hand \d+/.test(t) && /won cards with [a-z ]+ \d+/.test(t))
    || heard.filter((t) => /, dealer/.test(t)).length !== 1) throw new Error(`the seat plates are heard as ${JSON.stringify(heard)}`);
  log(`a seat plate is heard as "${heard[0]}"`);
});
