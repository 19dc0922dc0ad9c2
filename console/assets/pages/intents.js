// /ui/intents: the live intents (GET /v1/intents) by id, filtered by the
// scope they overlap (agent, env, board, record) and their holder, and an
// intent opened by id. The list follows the change feed's intent.* events;
// a renewal is not in the feed, so an intent whose countdown runs out is
// read again (renewed, it stays with its new expiry; expired, it goes).

import { request, url } from '../api.js';
import { h, link, path, field, section, badge } from '../dom.js';
import { pagedList } from '../ui.js';
import { scopeView, countdown, clockFrom, tick } from '../intent-view.js';

const scopeNames = ['agent', 'env', 'board', 'record'];
const names = [...scopeNames, 'holder'];

export default async function intents(main, ctx) {
  const id = h('input', { type: 'text', name: 'intent_id', required: true, testid: 'intent-open-id', autocomplete: 'off', spellcheck: 'false' });
  const open = h('form', { class: 'panel row', testid: 'intent-open-form' }, field('Intent id', id, 'Ended intents too.'),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'intent-open-submit' }, 'Open intent'));
  open.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (id.value.trim()) ctx.navigate(path('/ui/intents', id.value.trim()));
  });

  const q = Object.fromEntries(names.map((n) => [n, ctx.query.get(n) || '']));
  const text = (name, testid) => h('input', { type: 'text', name, value: q[name], testid, autocomplete: 'off', spellcheck: 'false' });
  const inputs = {
    agent: text('agent', 'intents-agent'),
    env: text('env', 'intents-env'),
    board: text('board', 'intents-board'),
    record: text('record', 'intents-record'),
    holder: text('holder', 'intents-holder'),
  };
  const filter = h('form', { class: 'panel', testid: 'intents-filter-form' },
    h('div', { class: 'row' }, field('Agent', inputs.agent), field('Env', inputs.env), field('Board', inputs.board),
      field('Record', inputs.record, 'board/id, or board/prefix*.'), field('Holder', inputs.holder)),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-primary', testid: 'intents-submit' }, 'Filter')));
  filter.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(url('/ui/intents', Object.fromEntries(names.map((n) => [n, inputs[n].value.trim()]))));
  });

  // A scoped token lists intents by a scope within its own: without one
  // the API refuses, so the page asks for a filter instead.
  const byScope = scopeNames.some((n) => q[n]);
  const needsFilter = Boolean(ctx.session && ctx.session.scopes) && !byScope;
  let empty = byScope || q.holder ? 'No live intent matches.' : 'No live intent.';
  if (needsFilter) empty = 'Your token is scoped: filter by an agent, env, board or record within its scopes to list the intents there.';

  const list = pagedList({
    testid: 'intents',
    caption: byScope || q.holder ? 'Live intents that overlap the filter, by id' : 'Live intents, by id',
    fetchPage: async (cursor) => {
      if (needsFilter) return { items: [], next: null };
      const res = await request('GET', '/v1/intents', { query: { ...q, limit: 50, cursor } });
      clockFrom(res.headers);
      return res.data;
    },
    rowProps: (it) => ({ testid: 'intent-row', data: { intentId: it.id, holder: it.holder, mode: it.mode, fence: it.fence } }),
    empty,
    columns: [
      { label: 'Intent', cell: (it) => link(path('/ui/intents', it.id), it.id, { testid: 'intent-link' }) },
      { label: 'Holder', cell: (it) => it.holder },
      { label: 'Mode', cell: (it) => badge(it.mode) },
      { label: 'Scope', cell: (it) => scopeView(it.scope) },
      { label: 'Description', cell: (it) => it.description || h('span', { class: 'muted' }, '—') },
      { label: 'Fence', class: 'num', cell: (it) => String(it.fence) },
      { label: 'Expires in', cell: (it) => countdown(it.expires_at) },
      { label: 'Created by', cell: (it) => it.created_by },
    ],
  });
  main.append(ctx.heading('Intents'), open, filter, section('Live intents', null, list.el));
  await list.ready;
  ctx.live({ actions: ['intent.registered', 'intent.released', 'intent.expired'] }, list.reload);
  let readAt = 0;
  ctx.every(1000, () => {
    if (tick(list.el) && Date.now() - readAt > 5000) {
      readAt = Date.now();
      list.reload();
    }
  });
}
