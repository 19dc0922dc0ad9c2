// /ui/change-requests: gated writes of protected envs, filtered by
// state (pending by default), agent and env; approve or reject.

import { get, send, url } from '../api.js';
import { h, time, replace, section, field, badge, json, link, path } from '../dom.js';
import { pagedList, announce, busy, confirm, pageError } from '../ui.js';

const states = ['pending', 'applied', 'failed', 'rejected', 'expired', 'cancelled'];

export default async function changeRequests(main, ctx) {
  const q = { state: ctx.query.has('state') ? ctx.query.get('state') : 'pending', agent: ctx.query.get('agent') || '', env: ctx.query.get('env') || '' };
  const notices = h('div', {});

  const stateSel = h('select', { name: 'state', testid: 'cr-filter-state' }, h('option', { value: '' }, 'any state'),
    states.map((s) => h('option', { value: s, selected: s === q.state }, s)));
  const agent = h('input', { type: 'text', name: 'agent', value: q.agent, testid: 'cr-filter-agent' });
  const env = h('input', { type: 'text', name: 'env', value: q.env, testid: 'cr-filter-env' });
  const filter = h('form', { class: 'panel row', testid: 'cr-filter-form' }, field('State', stateSel), field('Agent', agent), field('Env', env),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'cr-filter-submit' }, 'Filter'));
  filter.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(url('/ui/change-requests', { state: stateSel.value || 'any', agent: agent.value.trim(), env: env.value.trim() }));
  });
  if (q.state === 'any') q.state = '';

  const list = pagedList({
    testid: 'change-requests',
    caption: 'Change requests, newest first',
    fetchPage: (cursor) => get('/v1/change-requests', { ...q, limit: 50, cursor }),
    rowProps: (cr) => ({ testid: 'cr-row', data: { crId: cr.id, state: cr.state } }),
    empty: 'No change request matches.',
    columns: [
      { label: 'Request', cell: (cr) => h('code', {}, cr.id) },
      { label: 'Action', cell: (cr) => cr.action },
      { label: 'Target', cell: (cr) => (cr.agent ? link(path('/ui/agents', cr.agent, 'envs', cr.env), `${cr.agent} in ${cr.env}`) : `env ${cr.env}`) },
      { label: 'Change', cell: (cr) => h('details', {}, h('summary', {}, `expects revision ${cr.target_revision}`), json(cr.request)) },
      { label: 'State', cell: (cr) => [badge(cr.state), cr.problem ? h('p', { class: 'hint' }, `${cr.problem.detail} (${cr.problem.code})`) : null] },
      { label: 'Approvals', class: 'num', cell: (cr) => h('span', { testid: 'cr-approvals', title: cr.approvals.join(', ') }, `${cr.approvals.length} / ${cr.approvals_needed}`) },
      { label: 'Requested', cell: (cr) => [time(cr.created_at), ` by ${cr.requested_by}`] },
      { label: 'Expires', cell: (cr) => time(cr.expires_at) },
      { label: 'Decide', rowHeader: false, cell: (cr) => (cr.state === 'pending' ? decide(cr) : '') },
    ],
  });

  function decide(cr) {
    const approve = h('button', { type: 'button', class: 'btn btn-small btn-primary', testid: 'cr-approve', 'aria-label': `Approve ${cr.id}` }, 'Approve');
    const reject = h('button', { type: 'button', class: 'btn btn-small btn-danger', testid: 'cr-reject', 'aria-label': `Reject ${cr.id}` }, 'Reject');
    const act = (verb, button) => busy(button, async () => {
      try {
        const res = await send('POST', `/v1/change-requests/${encodeURIComponent(cr.id)}/${verb}`);
        const after = res.data || {};
        const outcome = after.state === 'applied' ? 'approved and applied' : after.state === 'failed' ? `approved, but it failed: ${after.problem ? after.problem.detail : ''}` : `${verb === 'approve' ? 'approved' : 'rejected'} (${after.state})`;
        replace(notices, h('p', { class: after.state === 'failed' ? 'alert alert-error' : 'alert alert-ok', role: 'status' }, `Change request ${cr.id} ${outcome}.`));
        announce(`Change request ${cr.id} ${outcome}.`);
        await list.reload();
      } catch (err) {
        replace(notices, pageError(err));
      }
    });
    approve.addEventListener('click', () => act('approve', approve));
    reject.addEventListener('click', async () => {
      const answer = await confirm({ title: `Reject ${cr.id}?`, message: `The ${cr.action} change is not applied.`, action: 'Reject' });
      if (answer.ok) act('reject', reject);
    });
    // The requester may also withdraw it (approving it is refused: self_approval).
    return h('span', { class: 'actions' }, approve, reject, cr.requested_token === ctx.session.actor ? cancelButton(cr) : null);
  }

  // cancelButton: a request is withdrawn by its requester.
  function cancelButton(cr) {
    const b = h('button', { type: 'button', class: 'btn btn-small', testid: 'cr-cancel', 'aria-label': `Cancel request ${cr.id}` }, 'Cancel request');
    b.addEventListener('click', async () => {
      const answer = await confirm({ title: `Cancel ${cr.id}?`, message: `Your ${cr.action} change is withdrawn and not applied.`, action: 'Cancel request' });
      if (!answer.ok) return;
      await busy(b, async () => {
        try {
          await send('POST', `/v1/change-requests/${encodeURIComponent(cr.id)}/cancel`);
          replace(notices, h('p', { class: 'alert alert-ok', role: 'status' }, `Change request ${cr.id} cancelled.`));
          announce(`Change request ${cr.id} cancelled.`);
          await list.reload();
        } catch (err) {
          replace(notices, pageError(err));
        }
      });
    });
    return b;
  }

  main.append(ctx.heading('Change requests'), filter, notices, section('Requests', null, list.el));
  await list.ready;
  ctx.live({ actions: ['change_request.created', 'change_request.approved', 'change_request.applied', 'change_request.failed',
    'change_request.rejected', 'change_request.cancelled', 'change_request.expired'] }, list.reload);
}
