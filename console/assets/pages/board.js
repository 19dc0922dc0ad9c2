// /ui/boards/{board}: the board's state machine, its records by state
// (owner, fence, claim expiry, attempts) and its reclaims.

import { get, url } from '../api.js';
import { h, path, time, section, dl, field, badge, json } from '../dom.js';
import { pagedList } from '../ui.js';

export default async function board(main, ctx) {
  const name = ctx.params.board;
  const api = path('/v1/boards', name);
  main.append(ctx.heading(`Board ${name}`));
  const def = await get(api);
  const state = ctx.query.get('state') || '';

  const filter = h('select', { name: 'state', testid: 'board-state-filter' }, h('option', { value: '' }, 'All states'),
    def.states.map((st) => h('option', { value: st, selected: st === state }, st)));
  const filterForm = h('form', { class: 'row' }, field('Show records in state', filter),
    h('button', { type: 'submit', class: 'btn', testid: 'board-state-submit' }, 'Show'));
  filterForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(url(path('/ui/boards', name), { state: filter.value }));
  });

  const records = pagedList({
    testid: 'records',
    caption: state ? `Records in ${state}, in board order` : 'Records, in board order (priority, then age)',
    fetchPage: (cursor) => get(`${api}/records`, { state, limit: 50, cursor }),
    rowProps: (r) => ({ testid: 'record-row', data: { recordId: r.id, state: r.state } }),
    empty: state ? `No record is in ${state}.` : 'No records.',
    columns: [
      { label: 'Record', cell: (r) => h('code', {}, r.id) },
      { label: 'State', cell: (r) => badge(r.state, def.terminal.includes(r.state) ? 'terminal' : r.state) },
      { label: 'Owner', cell: (r) => h('span', { testid: 'record-owner' }, r.owner || h('span', { class: 'muted' }, 'unclaimed')) },
      { label: 'Claim expires', cell: (r) => (r.claim_expires_at ? time(r.claim_expires_at) : '—') },
      { label: 'Fence', class: 'num', cell: (r) => String(r.fence) },
      { label: 'Attempts', class: 'num', cell: (r) => `${r.attempts} / ${def.claim.max_attempts}` },
      { label: 'Priority', class: 'num', cell: (r) => String(r.priority) },
      { label: 'Payload', cell: (r) => h('details', {}, h('summary', {}, 'Show'), json(r.payload)) },
      { label: 'Updated', cell: (r) => time(r.updated_at) },
    ],
  });

  const reclaims = pagedList({
    testid: 'reclaims',
    caption: 'Reclaimed claims (expired and taken back by the sweeper), oldest first',
    fetchPage: async (since) => {
      const page = await get(`${api}/changes`, { actions: 'board.record_reclaimed', since: since || 0, wait_ms: 0, limit: 50 });
      return { items: page.items, next: page.items.length === 50 ? page.next : null };
    },
    empty: 'No claim has been reclaimed (within the feed\'s retention).',
    columns: [
      { label: 'Record', cell: (e) => h('code', {}, e.details.id) },
      { label: 'Back to', cell: (e) => e.details.state },
      { label: 'New fence', class: 'num', cell: (e) => String(e.details.fence) },
      { label: 'At', cell: (e) => time(e.at) },
    ],
  });

  const c = def.claim;
  main.append(
    section('State machine', 'board-definition', dl([
      ['States', def.states.join(', ')],
      ['Initial', def.initial],
      ['Transitions', h('ul', {}, Object.entries(def.transitions).map(([from, to]) => h('li', {}, `${from} → ${to.join(', ')}`)))],
      ['Claim', `${c.from} → ${c.to} for ${c.ttl_ms / 1000} s; an expired claim goes back to ${c.reclaim_to}; after ${c.max_attempts} attempts: ${c.exhausted}`],
      ['Terminal', def.terminal.join(', ')],
      ['Quota', def.quota && def.quota.claims_per_minute ? `${def.quota.claims_per_minute} claims per minute per token` : 'none'],
      ['Revision', String(def.revision)],
    ])),
    section('Records', null, filterForm, records.el),
    section('Reclaims', null, reclaims.el));
  await Promise.all([records.ready, reclaims.ready]);
  ctx.live({ actions: ['board.record_created', 'board.record_claimed', 'board.record_updated', 'board.record_released', 'board.record_reclaimed', 'board.defined'], board: name },
    () => Promise.all([records.reload(), reclaims.reload()]));
}
