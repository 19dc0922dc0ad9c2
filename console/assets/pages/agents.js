// /ui/: the agents, by name, a page at a time.

import { get } from '../api.js';
import { h, link, path, badge } from '../dom.js';
import { pagedList } from '../ui.js';

export default async function agents(main, ctx) {
  const list = pagedList({
    testid: 'agents',
    caption: 'Agents, by name',
    fetchPage: (cursor) => get('/v1/agents', { limit: 50, cursor }),
    rowProps: (a) => ({ testid: 'agent-row', data: { agent: a.agent } }),
    empty: 'No agents yet: publish a first version with promptctl or POST /v1/agents/{agent}/versions.',
    columns: [
      { label: 'Agent', cell: (a) => link(path('/ui/agents', a.agent), a.agent, { testid: 'agent-link' }) },
      { label: 'Latest version', class: 'num', cell: (a) => String(a.latest_version) },
      { label: 'Envs (version)', cell: (a) => envList(a) },
      { label: 'Content hash', cell: (a) => h('code', { title: a.latest_content_hash }, a.latest_content_hash.slice(0, 19) + '…') },
    ],
  });
  main.append(ctx.heading('Agents'), list.el);
  await list.ready;
  ctx.live({ actions: ['version.created', 'pointer.switched', 'release.promoted', 'env.rolled_back'] }, list.reload);
}

function envList(a) {
  const envs = Object.entries(a.envs || {}).sort(([x], [y]) => x.localeCompare(y));
  if (!envs.length) return h('span', { class: 'muted' }, 'none');
  return h('ul', { class: 'inline-list' }, envs.map(([env, version]) =>
    h('li', {}, link(path('/ui/agents', a.agent, 'envs', env), env), ' ', badge(`v${version}`, 'version'))));
}
