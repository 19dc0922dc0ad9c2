// /ui/audit: the audit log, newest first, filtered (by the API) by agent,
// env, action, actor, trace id and session id.

import { get, url } from '../api.js';
import { h, time, section, field, json } from '../dom.js';
import { pagedList } from '../ui.js';

const names = ['agent', 'env', 'action', 'actor', 'trace_id', 'session_id'];

export default async function audit(main, ctx) {
  const q = Object.fromEntries(names.map((n) => [n, ctx.query.get(n) || '']));
  const inputs = {
    agent: h('input', { type: 'text', name: 'agent', value: q.agent, testid: 'audit-agent' }),
    env: h('input', { type: 'text', name: 'env', value: q.env, testid: 'audit-env' }),
    action: h('input', { type: 'text', name: 'action', value: q.action, testid: 'audit-action', placeholder: 'version.created' }),
    actor: h('input', { type: 'text', name: 'actor', value: q.actor, testid: 'audit-actor' }),
    trace_id: h('input', { type: 'text', name: 'trace_id', value: q.trace_id, testid: 'audit-trace-id', pattern: '[0-9a-f]{32}', spellcheck: 'false' }),
    session_id: h('input', { type: 'text', name: 'session_id', value: q.session_id, testid: 'audit-session-id' }),
  };
  const form = h('form', { class: 'panel', testid: 'audit-filter-form' },
    h('div', { class: 'row' }, field('Agent', inputs.agent), field('Env', inputs.env), field('Action', inputs.action, 'An exact event name.'),
      field('Actor', inputs.actor, 'A token\'s name, exactly.'), field('Trace id', inputs.trace_id, '32 hex digits.'), field('Session id', inputs.session_id)),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-primary', testid: 'audit-submit' }, 'Filter')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(url('/ui/audit', Object.fromEntries(names.map((n) => [n, inputs[n].value.trim()]))));
  });

  const list = pagedList({
    testid: 'audit',
    caption: 'Audit events, newest first',
    fetchPage: (cursor) => get('/v1/audit', { ...q, order: 'desc', limit: 50, cursor }),
    rowProps: (e) => ({ testid: 'audit-row', data: { eventId: e.id, action: e.action } }),
    empty: 'No audit event matches.',
    columns: [
      { label: 'Id', class: 'num', cell: (e) => String(e.id) },
      { label: 'At', cell: (e) => time(e.at) },
      { label: 'Action', cell: (e) => h('code', {}, e.action) },
      { label: 'Resource', cell: (e) => e.resource },
      { label: 'Actor', cell: (e) => e.actor },
      { label: 'Details', cell: (e) => h('details', {}, h('summary', {}, 'Show'), json(e.details)) },
      { label: 'Trace', cell: (e) => (e.trace_id ? h('a', { href: url('/ui/audit', { trace_id: e.trace_id }), title: e.trace_id }, `${e.trace_id.slice(0, 8)}…`) : '—') },
      { label: 'Instance', cell: (e) => e.instance },
    ],
  });
  main.append(ctx.heading('Audit log'), form, section('Events', null, list.el));
  await list.ready;
  ctx.live({}, list.reload); // every action is audited: polling beats subscribing to all of them
}
