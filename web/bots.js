// The account page's bot section (docs/protocol.md §2.26), loaded only there:
// - a claimed account that is not a bot yet may become one, for good, after a clear
//   confirmation (the server refuses an account that has played: `has_played`);
// - a bot account creates API tokens (each shown once, with a copy button) and revokes
//   them. Tokens are the devices labelled "bot API token".

import { h, mount } from './dom.js';
import { api } from './api.js';

const TOKEN_LABEL = 'bot API token';
const when = (ms) => new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The bot section for `account` (GET /api/account) and its `devices`; `reload()` redraws the page. */
export function botSection(account, devices, reload) {
  if (account.username === null) return null;
  const err = h('p', { class: 'form-error', role: 'alert', testid: 'bot-error' });
  const fail = (ex) => { err.textContent = ex.message; };
  if (!account.bot) {
    const sure = h('input', { type: 'checkbox', id: 'bot-sure', testid: 'bot-sure' });
    const confirmBtn = h('button', { class: 'btn danger', type: 'button', testid: 'bot-confirm', disabled: true }, 'Turn it into a bot account for good');
    const cancelBtn = h('button', { class: 'btn', type: 'button', testid: 'bot-cancel' }, 'Cancel');
    const confirmBox = h('div', { class: 'confirm-box', testid: 'bot-confirm-box', role: 'group', 'aria-labelledby': 'bot-warn', hidden: true },
      h('p', { id: 'bot-warn', class: 'warn' }, h('strong', null, 'This cannot be undone. '),
        `“${account.player.name}” becomes a program’s account: it plays through API tokens, its seats show a BOT badge, and its matches are rated in the bots pool only. There is no way back to a person’s account.`),
      h('label', { class: 'check', for: 'bot-sure' }, sure, 'I understand: this account becomes a bot account for good.'),
      h('div', { class: 'row' }, confirmBtn, cancelBtn));
    const start = h('button', { class: 'btn', type: 'button', testid: 'bot-start' }, 'Make this a bot account…');
    sure.addEventListener('change', () => { confirmBtn.disabled = !sure.checked; });
    start.addEventListener('click', () => {
      err.textContent = '';
      confirmBox.hidden = false;
      start.hidden = true;
      sure.focus();
    });
    cancelBtn.addEventListener('click', () => {
      confirmBox.hidden = true;
      start.hidden = false;
      sure.checked = false;
      confirmBtn.disabled = true;
      start.focus();
    });
    confirmBtn.addEventListener('click', async () => {
      err.textContent = '';
      confirmBtn.disabled = true;
      try {
        await api.makeBot();
        reload();
      } catch (ex) {
        confirmBtn.disabled = !sure.checked;
        fail(ex);
      }
    });
    return h('section', { class: 'panel', testid: 'bot-section' },
      h('h2', null, 'Bot account'),
      h('p', { class: 'muted small' }, 'Writing a program that plays? A new account that has never sat at a table can become a bot account, with API tokens for your program (see the README, “Bots”).'),
      start, confirmBox, err);
  }
  const tokens = devices.filter((d) => d.label === TOKEN_LABEL);
  const shown = h('div', { class: 'token-shown', testid: 'token-shown', 'aria-live': 'polite' });
  const create = h('button', { class: 'btn primary', type: 'button', testid: 'token-create' }, 'Create an API token');
  create.addEventListener('click', async () => {
    err.textContent = '';
    create.disabled = true;
    try {
      const t = await api.botToken();
      const field = h('input', { id: 'token-value', type: 'text', readonly: true, value: t.token, testid: 'token-value', autocomplete: 'off', spellcheck: 'false' });
      const copied = h('span', { class: 'muted small', 'aria-live': 'polite', testid: 'token-copied' });
      const copy = h('button', { class: 'btn small', type: 'button', testid: 'token-copy' }, 'Copy');
      copy.addEventListener('click', async () => {
        field.select();
        try {
          await navigator.clipboard.writeText(t.token);
          copied.textContent = 'Copied.';
        } catch {
          copied.textContent = 'Select the token and copy it yourself.';
        }
      });
      mount(shown,
        h('label', { for: 'token-value' }, 'Your new token: copy it now, it is shown only once'),
        h('div', { class: 'row token-row' }, field, copy), copied,
        h('p', { class: 'muted small' }, 'Your program sends it as “Authorization: Bearer <token>”.'),
        h('button', { class: 'btn small', type: 'button', testid: 'token-done', onclick: reload }, 'Done: list my tokens'));
      field.focus();
      field.select();
    } catch (ex) {
      fail(ex);
    } finally {
      create.disabled = false;
    }
  });
  const revoke = async (id, btn) => {
    err.textContent = '';
    btn.disabled = true;
    try {
      await api.revokeBotToken(id);
      reload();
    } catch (ex) {
      btn.disabled = false;
      fail(ex);
    }
  };
  return h('section', { class: 'panel', testid: 'bot-section', dataset: { bot: 'true' } },
    h('h2', null, 'Bot account: API tokens'),
    h('p', { class: 'muted small' }, `“${account.player.name}” is a bot account. Each token signs your program in; revoking one stops it at once.`),
    tokens.length === 0 ? h('p', { class: 'muted', testid: 'no-tokens' }, 'No API tokens yet.')
      : h('ul', { class: 'devices', testid: 'tokens' }, tokens.map((d) => {
        const btn = h('button', { class: 'btn small', type: 'button', testid: 'token-revoke' }, 'Revoke');
        btn.addEventListener('click', () => revoke(d.id, btn));
        return h('li', { testid: 'token', dataset: { id: d.id } },
          h('span', null, h('strong', null, 'API token'), d.current ? ' (this browser)' : ''),
          h('span', { class: 'muted small' }, ` made ${when(d.created_at)}, last used ${when(d.last_seen_at)} `),
          d.current ? null : btn);
      })),
    h('div', { class: 'row' }, create),
    shown, err);
}
