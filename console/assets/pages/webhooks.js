// /ui/webhooks: the webhooks, a page at a time, and the form
// creating one; its secret is shown once.

import { get, send, idempotencyKey } from '../api.js';
import { h, link, path, time, replace, section, field, badge, splitList } from '../dom.js';
import { pagedList, formError, secretOnce, announce, busy } from '../ui.js';

export default async function webhooks(main, ctx) {
  const list = pagedList({
    testid: 'webhooks',
    caption: 'Webhooks',
    fetchPage: (cursor) => get('/v1/webhooks', { limit: 50, cursor }),
    rowProps: (w) => ({ testid: 'webhook-row', data: { webhookId: w.id } }),
    empty: 'No webhooks.',
    columns: [
      { label: 'Webhook', cell: (w) => link(path('/ui/webhooks', w.id), w.id, { testid: 'webhook-link' }) },
      { label: 'URL', cell: (w) => h('code', {}, w.url) },
      { label: 'Actions', cell: (w) => w.actions.join(', ') },
      { label: 'Agents', cell: (w) => (w.agents.length ? w.agents.join(', ') : 'all') },
      { label: 'Enabled', cell: (w) => badge(w.enabled ? 'enabled' : 'disabled', w.enabled ? 'live' : 'failed') },
      { label: 'Description', cell: (w) => w.description },
      { label: 'Created', cell: (w) => time(w.created_at) },
    ],
  });

  const urlInput = h('input', { type: 'url', name: 'url', required: true, maxlength: '2048', testid: 'webhook-url', placeholder: 'https://hooks.example.com/promptd', class: 'wide' });
  const actions = h('input', { type: 'text', name: 'actions', required: true, value: 'pointer.switched, release.*', testid: 'webhook-actions' });
  const agents = h('input', { type: 'text', name: 'agents', testid: 'webhook-agents' });
  const description = h('input', { type: 'text', name: 'description', maxlength: '1024', testid: 'webhook-description' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'webhook-submit' }, 'Create webhook');
  const result = h('div', {});
  const form = h('form', { class: 'panel', testid: 'webhook-create-form', novalidate: true },
    field('URL', urlInput), h('div', { class: 'row' },
      field('Actions', actions, 'Comma-separated event names; a trailing * matches a family (release.*).'),
      field('Agents (optional)', agents, 'Comma-separated; empty: every agent.'),
      field('Description (optional)', description)),
    h('div', { class: 'actions' }, submit));
  const errors = formError(form);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errors.clear();
    const body = { url: urlInput.value.trim(), actions: splitList(actions.value), description: description.value.trim() || undefined };
    if (splitList(agents.value).length) body.agents = splitList(agents.value);
    if (!body.url || !body.actions.length) { errors.show(new Error('A webhook needs a URL and at least one action.')); return; }
    await busy(submit, async () => {
      try {
        const res = await send('POST', '/v1/webhooks', body, { 'Idempotency-Key': idempotencyKey() });
        replace(result, secretOnce(`Webhook ${res.data.id} created. Its signing secret:`, res.data.secret));
        form.reset();
        await list.reload();
        announce(`Webhook ${res.data.id} created; its secret is shown once.`);
      } catch (err) {
        errors.show(err);
      }
    });
  });

  main.append(ctx.heading('Webhooks'), result, section('Webhooks', null, list.el), section('Create a webhook', null, form));
  await list.ready;
  ctx.live({ actions: ['webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.disabled'] }, list.reload);
}
