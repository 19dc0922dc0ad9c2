// /ui/webhooks/{id}: a webhook, enable/disable, secret rotation (the
// new secret shown once), delete, and its deliveries with retry.

import { get, send, ApiError } from '../api.js';
import { h, path, time, replace, section, dl, badge } from '../dom.js';
import { pagedList, pageError, secretOnce, announce, busy, confirm } from '../ui.js';

export default async function webhook(main, ctx) {
  const id = ctx.params.id;
  const api = path('/v1/webhooks', id);
  main.append(ctx.heading(`Webhook ${id}`));
  let w = await get(api);
  const summary = h('div', { testid: 'webhook-summary' });
  const notices = h('div', {});
  const toggle = h('button', { type: 'button', class: 'btn', testid: 'webhook-toggle' });
  const rotate = h('button', { type: 'button', class: 'btn', testid: 'webhook-rotate' }, 'Rotate secret');
  const del = h('button', { type: 'button', class: 'btn btn-danger', testid: 'webhook-delete' }, 'Delete webhook');

  const deliveries = pagedList({
    testid: 'deliveries',
    caption: 'Deliveries, newest first',
    fetchPage: (cursor) => get(`${api}/deliveries`, { limit: 50, cursor }),
    rowProps: (d) => ({ testid: 'delivery-row', data: { deliveryId: d.id, state: d.state } }),
    empty: 'No deliveries yet.',
    columns: [
      { label: 'Delivery', cell: (d) => h('code', {}, d.id) },
      { label: 'Event', cell: (d) => `${d.action} (seq ${d.seq})` },
      { label: 'State', cell: (d) => badge(d.state) },
      { label: 'Attempts', class: 'num', cell: (d) => String(d.attempts) },
      { label: 'Last status', class: 'num', cell: (d) => (d.last_status === null ? '—' : String(d.last_status)) },
      { label: 'Last error', cell: (d) => d.last_error || '—' },
      { label: 'Next attempt', cell: (d) => (d.next_attempt_at ? time(d.next_attempt_at) : '—') },
      { label: 'Retry', rowHeader: false, cell: (d) => (d.state === 'delivered' ? '' : retryButton(d)) },
    ],
  });

  function retryButton(d) {
    const b = h('button', { type: 'button', class: 'btn btn-small', testid: 'delivery-retry', 'aria-label': `Retry delivery ${d.id}` }, 'Retry');
    b.addEventListener('click', () => busy(b, async () => {
      try {
        await send('POST', `${api}/deliveries/${encodeURIComponent(d.id)}/retry`);
        announce(`Delivery ${d.id} queued again.`);
        await deliveries.reload();
      } catch (err) {
        replace(notices, pageError(err));
      }
    }));
    return b;
  }

  function render() {
    summary.dataset.enabled = String(w.enabled);
    summary.dataset.revision = w.revision;
    replace(summary, dl([
      ['URL', h('code', {}, w.url)],
      ['Enabled', badge(w.enabled ? 'enabled' : 'disabled', w.enabled ? 'live' : 'failed')],
      ['Actions', w.actions.join(', ')],
      ['Agents', w.agents.length ? w.agents.join(', ') : 'all'],
      ['Description', w.description || '—'],
      ['Revision', String(w.revision)],
      w.previous_secret_signs_until ? ['Previous secret signs until', time(w.previous_secret_signs_until)] : null,
      ['Created', time(w.created_at)],
      ['Updated', time(w.updated_at)],
    ]));
    toggle.textContent = w.enabled ? 'Disable' : 'Enable';
  }

  async function change(method, to, body, done) {
    try {
      const res = await send(method, to, body);
      announce(done);
      return res;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'revision_conflict') {
        w = await get(api);
        render();
        replace(notices, pageError(new ApiError(409, { ...err.fields, detail: 'The webhook changed meanwhile; it has been reloaded: try again.' })));
      } else {
        replace(notices, pageError(err));
      }
      return null;
    }
  }

  toggle.addEventListener('click', () => busy(toggle, async () => {
    const res = await change('PATCH', api, { enabled: !w.enabled, expected_revision: w.revision }, w.enabled ? 'Webhook disabled.' : 'Webhook enabled.');
    if (res) { w = res.data; render(); replace(notices); }
  }));
  rotate.addEventListener('click', async () => {
    const answer = await confirm({ title: 'Rotate the signing secret?', message: 'A new secret signs from now on; the old one keeps signing too for 24 hours.', action: 'Rotate', danger: false });
    if (!answer.ok) return;
    await busy(rotate, async () => {
      const res = await change('POST', `${api}/rotate-secret`, { expected_revision: w.revision }, 'Secret rotated; the new secret is shown once.');
      if (res) {
        replace(notices, secretOnce('New signing secret:', res.data.secret));
        w = await get(api);
        render();
      }
    });
  });
  del.addEventListener('click', async () => {
    const answer = await confirm({ title: `Delete webhook ${id}?`, message: 'No more deliveries are made to it. This cannot be undone.', action: 'Delete' });
    if (!answer.ok) return;
    await busy(del, async () => {
      if (await change('DELETE', api, undefined, `Webhook ${id} deleted.`)) ctx.navigate('/ui/webhooks');
    });
  });

  render();
  main.append(notices, summary, h('div', { class: 'actions' }, toggle, rotate, del),
    section('Deliveries', null, deliveries.el));
  await deliveries.ready;
  ctx.live({}, async () => {
    try { w = await get(api); render(); } catch (err) { replace(notices, pageError(err)); }
    await deliveries.reload();
  });
}
