// Browser test of chat: a lobby line sent in one page appears in the other; at a table, a
// half-typed line keeps its text and focus while the table re-renders (the other player
// sits down), then reaches the other page; a reaction shows as its label; muting a player
// hides their lines in the muter's page only. Usage: node tests/browser/chat.mjs <base-url>

import { runBrowserTest } from './lib.mjs';

await runBrowserTest('chat in the lobby and at a table', async ({ player, tid, log }) => {
  const a = await player('Ada');
  const b = await player('Bob', { phone: true });
  const line = (p, text) => p.locator(tid('chat-line')).filter({ hasText: text });

  // Lobby chat.
  await a.locator(tid('chat-input')).fill('anyone for Trump?');
  await a.locator(tid('chat-input')).press('Enter');
  await line(b, 'anyone for Trump?').waitFor();
  log('a lobby line reached the other page');

  // A table: Ada creates it and starts typing before Bob sits down.
  await a.locator(tid('create-game')).selectOption('trump');
  await a.locator(tid('create-seats')).selectOption('2');
  await a.locator(tid('create-private')).uncheck();
  await a.locator(tid('create-submit')).click();
  await a.waitForURL(/#\/table\/[0-9a-f-]{36}$/);
  const tableId = a.url().match(/#\/table\/([0-9a-f-]{36})/)[1];
  await a.locator(tid('table-page')).waitFor();
  const input = a.locator(tid('chat-input'));
  await input.click();
  await input.pressSequentially('hello');
  const row = b.locator(`${tid('table-row')}[data-table-id="${tableId}"]`);
  await row.waitFor();
  await row.locator(tid('table-join')).click();
  await b.waitForURL(new RegExp(`#/table/${tableId}`));
  // Ada's page re-rendered with Bob seated: what she typed is still there, focused.
  await a.locator(tid('seat-row-1')).filter({ hasText: 'Bob' }).waitFor();
  if ((await input.inputValue()) !== 'hello') throw new Error(`the chat input lost its text: ${await input.inputValue()}`);
  if (!(await input.evaluate((el) => el === document.activeElement))) throw new Error('the chat input lost the focus');
  await a.keyboard.type(' Bob');
  await a.keyboard.press('Enter');
  await line(b, 'hello Bob').waitFor();
  await line(a, 'hello Bob').waitFor();
  if ((await input.inputValue()) !== '') throw new Error('a sent line stays in the input');
  log('a table line survived a re-render and reached the other page');

  // A reaction, then a mute: Bob's later lines no longer show for Ada, but do for Bob.
  await b.locator(tid('chat-emote-gg')).click();
  await line(a, 'GG').waitFor();
  await a.locator(tid('chat-mute')).filter({ hasText: 'Bob' }).first().click();
  await a.locator(tid('chat-line')).filter({ hasText: 'GG' }).waitFor({ state: 'detached' });
  await b.locator(tid('chat-input')).fill('can you hear me?');
  await b.locator(tid('chat-send')).click();
  await line(b, 'can you hear me?').waitFor();
  await a.locator(tid('chat-input')).fill('all quiet');
  await a.locator(tid('chat-input')).press('Enter');
  await line(a, 'all quiet').waitFor();
  if (await line(a, 'can you hear me?').count()) throw new Error("a muted player's line was shown");
  // Too long a line is refused in the page, before sending.
  await a.locator(tid('chat-input')).fill('x'.repeat(301));
  await a.locator(tid('chat-input')).press('Enter');
  await a.locator(tid('chat-error')).filter({ hasText: '300' }).waitFor();
  log('reactions, mute and the length limit work');
});
