// /ui/sessions: open a session by id, and the sessions the token may see
// (GET /v1/sessions), newest first, filtered by agent, env and state.

import { get, url } from '../api.js';
import { h, link, path, time, field, section } from '../dom.js';
import { pagedList } from '../ui.js';

const names = ['agent', 'env', 'state'];

export default async function sessions(main, ctx) {
  const id = h('input', { type: 'text', name: 'session_id', required: true, testid: 'session-open-id', autocomplete: 'off', spellcheck: 'false' });
  const open = h('form', { class: 'panel row', testid: 'session-open-form' }, field('Session id', id),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'session-open-submit' }, 'Open session'));
  open.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (id.value.trim()) ctx.navigate(path('/ui/sessions', id.value.trim()));
  });

  const q = Object.fromEntries(names.map((n) => [n, ctx.query.get(n) || '']));
  const inputs = {
    agent: h('input', { type: 'text', name: 'agent', value: q.agent, testid: 'sessions-agent', autocomplete: 'off', spellcheck: 'false' }),
    env: h('input', { type: 'text', name: 'env', value: q.env, testid: 'sessions-env', autocomplete: 'off', spellcheck: 'false' }),
    state: h('select', { name: 'state', testid: 'sessions-state' },
      ['', 'open', 'closed'].map((st) => h('option', { value: st, selected: st === q.state }, st || 'Open and closed'))),
  };
  const filter = h('form', { class: 'panel', testid: 'sessions-filter-form' },
    h('div', { class: 'row' }, field('Agent', inputs.agent), field('Env', inputs.env), field('State', inputs.state)),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-primary', testid: 'sessions-submit' }, 'Filter')));
  filter.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(url('/ui/sessions', Object.fromEntries(names.map((n) => [n, inputs[n].value.trim()]))));
  });

  const list = pagedList({
    testid: 'sessions',
    caption: 'Sessions, newest first',
    fetchPage: (cursor) => get('/v1/sessions', { agent: q.agent, env: q.env, state: q.state, limit: 50, cursor }),
    rowProps: (s) => ({ testid: 'session-row', data: { sessionId: s.session_id, state: s.state } }),
    empty: q.agent || q.env || q.state ? 'No session matches.' : 'No session yet.',
    columns: [
      { label: 'Session', cell: (s) => link(path('/ui/sessions', s.session_id), s.session_id, { testid: 'session-link' }) },
      { label: 'Agent', cell: (s) => link(path('/ui/agents', s.agent), s.agent) },
      { label: 'Env', cell: (s) => s.env },
      { label: 'User', cell: (s) => s.user_id || h('span', { class: 'muted' }, '—') },
      { label: 'Pinned version', class: 'num', cell: (s) => `v${s.pinned_version}` },
      { label: 'State', cell: (s) => s.state },
      { label: 'Lease', cell: (s) => (s.lease ? `${s.lease.holder} (fence ${s.lease.fence})` : h('span', { class: 'muted' }, 'none')) },
      { label: 'Revision', class: 'num', cell: (s) => String(s.revision) },
      { label: 'Turns', class: 'num', cell: (s) => String(s.turn_count) },
      { label: 'Created', cell: (s) => time(s.created_at) },
      { label: 'Updated', cell: (s) => time(s.updated_at) },
    ],
  });
  main.append(ctx.heading('Sessions'), open, filter, section('Sessions', null, list.el));
  await list.ready;
  ctx.live({ actions: ['session.created', 'session.closed', 'session.swept', 'session.repinned', 'lease.acquired', 'lease.preempted', 'lease.released'] },
    list.reload);
}
