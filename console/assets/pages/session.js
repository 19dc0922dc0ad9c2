// /ui/sessions/{id}: a session: pinned version, lease holder, fence,
// its turns (paged by seq) and its state entries. Turns and state are
// not in the change feed: the page polls.

import { get } from '../api.js';
import { h, link, path, time, table, replace, section, dl, badge, json } from '../dom.js';
import { pagedList, pageError } from '../ui.js';

export default async function session(main, ctx) {
  const id = ctx.params.id;
  const api = path('/v1/sessions', id);
  main.append(ctx.heading(`Session ${id}`));
  let s = await get(api, { limit: 1 });

  const summary = h('div', { testid: 'session-summary' });
  const stateEl = h('div', { testid: 'state-entries' });
  const turns = pagedList({
    testid: 'turns',
    caption: 'Turns, oldest first',
    fetchPage: async (since) => {
      const page = await get(api, { since: since || 0, limit: 50 });
      return { items: page.turns || [], next: page.next_since === null || page.next_since === undefined ? null : String(page.next_since) };
    },
    rowProps: (t) => ({ testid: 'turn-row', data: { seq: t.seq } }),
    empty: 'No turns yet.',
    columns: [
      { label: 'Seq', class: 'num', cell: (t) => String(t.seq) },
      { label: 'Role', cell: (t) => [t.role, t.name ? ` (${t.name})` : ''] },
      { label: 'Content', cell: (t) => [contentOf(t.content), t.tool_calls ? json(t.tool_calls) : null, t.tool_call_id ? h('p', { class: 'hint' }, `answers ${t.tool_call_id}`) : null] },
      { label: 'At', cell: (t) => time(t.created_at) },
    ],
  });

  function renderSummary() {
    summary.dataset.state = s.state;
    summary.dataset.revision = s.revision;
    summary.dataset.fence = s.fence;
    const lease = s.lease;
    replace(summary, dl([
      ['State', badge(s.state)],
      ['Agent, env', link(path('/ui/agents', s.agent, 'envs', s.env), `${s.agent} in ${s.env}`)],
      ['User', s.user_id === null ? h('span', { class: 'muted' }, 'none') : s.user_id],
      ['Pinned version', link(`${path('/ui/agents', s.agent)}?version=${s.pinned_version}`, `v${s.pinned_version}`)],
      ['Lease holder', h('span', { testid: 'session-lease', data: { holder: lease ? lease.holder : '' } },
        lease ? [lease.holder, ' (fence ', String(lease.fence), ', until ', time(lease.expires_at), ')'] : 'none')],
      ['Fence', h('span', { testid: 'session-fence', class: 'mono' }, String(s.fence))],
      ['Revision', String(s.revision)],
      ['Turns', String(s.turn_count)],
      ['Idle TTL', `${Math.round(s.idle_ttl_ms / 60000)} min`],
      ['Created', time(s.created_at)],
      ['Updated', time(s.updated_at)],
      Object.keys(s.metadata || {}).length ? ['Metadata', json(s.metadata)] : null,
    ]));
  }

  async function loadState() {
    try {
      const entries = Object.entries(await get(`${api}/state`)).sort(([a], [b]) => a.localeCompare(b));
      replace(stateEl, table({
        caption: 'State entries (the session\'s shared blackboard)',
        items: entries,
        empty: 'No state entries.',
        rowProps: ([key]) => ({ testid: 'state-row', data: { key } }),
        columns: [
          { label: 'Key', cell: ([key]) => h('code', {}, key) },
          { label: 'Revision', class: 'num', cell: ([, e]) => String(e.revision) },
          { label: 'Value', cell: ([, e]) => json(e.value) },
        ],
      }));
    } catch (err) {
      replace(stateEl, pageError(err));
    }
  }

  main.append(summary, section('Turns', null, turns.el), section('State', null, stateEl));
  renderSummary();
  await Promise.all([turns.ready, loadState()]);
  ctx.live({}, async () => {
    try {
      s = await get(api, { limit: 1 });
      renderSummary();
    } catch (err) {
      replace(summary, pageError(err));
    }
    await Promise.all([turns.reload(), loadState()]);
  });
}

function contentOf(content) {
  if (content === null || content === undefined) return h('span', { class: 'muted' }, '(no content)');
  if (typeof content === 'string') return h('pre', { class: 'prompt-text' }, content);
  return json(content);
}
