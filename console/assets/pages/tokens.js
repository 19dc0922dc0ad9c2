// /ui/tokens: the bootstrap tokens (PROMPTD_TOKENS), managed tokens (no
// secrets), the form creating one (its secret shown once) and revocation.

import { get, send, idempotencyKey } from '../api.js';
import { h, time, replace, section, field, badge, splitList, table } from '../dom.js';
import { pagedList, formError, secretOnce, announce, busy, confirm, pageError } from '../ui.js';

export default async function tokens(main, ctx) {
  const notices = h('div', {});
  const list = pagedList({
    testid: 'tokens',
    caption: 'Tokens',
    fetchPage: async (cursor) => {
      const page = await get('/v1/tokens', { limit: 50, cursor });
      showBootstrap(page.bootstrap || []);
      return page;
    },
    rowProps: (t) => ({ testid: 'token-row', data: { tokenName: t.name } }),
    empty: 'No managed tokens.',
    columns: [
      { label: 'Name', cell: (t) => t.name },
      { label: 'Role', cell: (t) => t.role },
      { label: 'Scopes', cell: (t) => scopesText(t.scopes) },
      { label: 'Created', cell: (t) => [time(t.created_at), ` by ${t.created_by}`] },
      { label: 'Expires', cell: (t) => (t.expires_at ? time(t.expires_at) : 'never') },
      { label: 'Last used', cell: (t) => (t.last_used_at ? time(t.last_used_at) : 'never') },
      { label: 'Status', cell: (t) => (t.revoked_at ? [badge('revoked'), ' ', time(t.revoked_at)] : badge('active', 'live')) },
      { label: 'Revoke', rowHeader: false, cell: (t) => (t.revoked_at ? '' : revokeButton(t)) },
    ],
  });

  // The bootstrap set lives in promptd's configuration: listed so that an
  // admin sees every token that can act; revoked only by a restart.
  const bootstrap = h('div', { testid: 'bootstrap-tokens' });
  function showBootstrap(toks) {
    if (!toks.length) { replace(bootstrap, h('p', { class: 'muted' }, 'None configured.')); return; }
    replace(bootstrap,
      h('p', { class: 'muted' }, 'Configured in PROMPTD_TOKENS: unscoped, never expiring, each its own principal. They end only when promptd restarts without them.'),
      table({ caption: 'Bootstrap tokens', items: toks, testid: 'bootstrap-tokens',
        rowProps: (t) => ({ testid: 'bootstrap-token-row', data: { tokenName: t.name } }),
        columns: [{ label: 'Name', cell: (t) => t.name }, { label: 'Role', cell: (t) => t.role }, { label: 'Principal', cell: (t) => t.principal }] }));
  }

  function revokeButton(t) {
    const b = h('button', { type: 'button', class: 'btn btn-small btn-danger', testid: 'token-revoke', 'aria-label': `Revoke token ${t.name}` }, 'Revoke');
    b.addEventListener('click', async () => {
      const answer = await confirm({ title: `Revoke token ${t.name}?`, message: 'Requests with it fail from now on and its console sessions and streams end.', action: 'Revoke' });
      if (!answer.ok) return;
      await busy(b, async () => {
        try {
          await send('DELETE', `/v1/tokens/${encodeURIComponent(t.name)}`);
          announce(`Token ${t.name} revoked.`);
          replace(notices);
          await list.reload();
        } catch (err) {
          replace(notices, pageError(err));
        }
      });
    });
    return b;
  }

  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '128', testid: 'token-name', autocomplete: 'off' });
  const role = h('select', { name: 'role', testid: 'token-role' }, h('option', { value: 'runtime' }, 'runtime'), h('option', { value: 'admin' }, 'admin'));
  const scopeAgents = h('input', { type: 'text', name: 'scopes', testid: 'token-scope-agents' });
  const scopeEnvs = h('input', { type: 'text', name: 'scopes_envs', testid: 'token-scope-envs' });
  const scopeBoards = h('input', { type: 'text', name: 'scopes_boards', testid: 'token-scope-boards' });
  const expires = h('input', { type: 'datetime-local', name: 'expires_at', testid: 'token-expires' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'token-submit' }, 'Create token');
  const scopeHint = 'Comma-separated names or prefixes ending in *; empty: all.';
  const form = h('form', { class: 'panel', testid: 'token-create-form', novalidate: true },
    h('div', { class: 'row' }, field('Name', name), field('Role', role), field('Expires (optional)', expires, 'Your local time; at most a year ahead.')),
    h('fieldset', {}, h('legend', {}, 'Scopes'), h('div', { class: 'row' },
      field('Agents', scopeAgents, scopeHint), field('Envs', scopeEnvs, scopeHint), field('Boards', scopeBoards, scopeHint))),
    h('div', { class: 'actions' }, submit));
  const errors = formError(form);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errors.clear();
    if (!name.value.trim()) { errors.show(new Error('A token needs a name.')); name.focus(); return; }
    const body = { name: name.value.trim(), role: role.value };
    const scopes = {};
    for (const [key, input] of [['agents', scopeAgents], ['envs', scopeEnvs], ['boards', scopeBoards]]) {
      if (splitList(input.value).length) scopes[key] = splitList(input.value);
    }
    if (Object.keys(scopes).length) body.scopes = scopes;
    if (expires.value) body.expires_at = new Date(expires.value).toISOString();
    await busy(submit, async () => {
      try {
        const res = await send('POST', '/v1/tokens', body, { 'Idempotency-Key': idempotencyKey() });
        replace(notices, secretOnce(`Token ${res.data.name} created. Its secret:`, res.data.secret));
        form.reset();
        await list.reload();
        announce(`Token ${res.data.name} created; its secret is shown once.`);
      } catch (err) {
        errors.show(err);
      }
    });
  });

  main.append(ctx.heading('Tokens'), notices, section('Tokens', null, list.el), section('Bootstrap tokens', null, bootstrap), section('Create a token', null, form));
  await list.ready;
  ctx.live({ actions: ['token.created', 'token.revoked'] }, list.reload);
}

function scopesText(scopes) {
  if (!scopes) return h('span', { class: 'muted' }, 'unscoped');
  const parts = ['agents', 'envs', 'boards'].filter((k) => scopes[k]).map((k) => `${k}: ${scopes[k].length ? scopes[k].join(', ') : 'none'}`);
  return parts.length ? parts.join('; ') : h('span', { class: 'muted' }, 'unscoped');
}
