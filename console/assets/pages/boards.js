// /ui/boards: open a board by name, and the boards the token may see
// (GET /v1/boards) by name, with their records per state.

import { get } from '../api.js';
import { h, link, path, time, field, section } from '../dom.js';
import { pagedList } from '../ui.js';

export default async function boards(main, ctx) {
  const name = h('input', { type: 'text', name: 'board', required: true, testid: 'board-open-name', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'panel row', testid: 'board-open-form' }, field('Board name', name),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'board-open-submit' }, 'Open board'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (name.value.trim()) ctx.navigate(path('/ui/boards', name.value.trim()));
  });
  const list = pagedList({
    testid: 'boards',
    caption: 'Boards by name, with their records per state',
    fetchPage: (cursor) => get('/v1/boards', { limit: 50, cursor }),
    rowProps: (b) => ({ testid: 'board-row', data: { board: b.board } }),
    empty: 'No board yet.',
    columns: [
      { label: 'Board', cell: (b) => link(path('/ui/boards', b.board), b.board, { testid: 'board-link' }) },
      { label: 'Records by state', cell: (b) => counts(b) },
      { label: 'Revision', class: 'num', cell: (b) => String(b.revision) },
      { label: 'Created', cell: (b) => time(b.created_at) },
      { label: 'Updated', cell: (b) => time(b.updated_at) },
    ],
  });
  main.append(ctx.heading('Boards'), form, section('Boards', null, list.el));
  await list.ready;
  ctx.live({ actions: ['board.defined', 'board.record_created', 'board.record_claimed', 'board.record_updated', 'board.record_released',
    'board.record_reclaimed'] }, list.reload);
}

// counts lists a board's states with their records, each linking to the
// board's records in that state.
function counts(b) {
  const states = Object.entries(b.counts || {});
  if (!states.length) return h('span', { class: 'muted' }, '—');
  return h('ul', { class: 'inline-list', testid: 'board-counts' }, states.map(([st, n]) => h('li', { data: { state: st, count: n } },
    link(`${path('/ui/boards', b.board)}?state=${encodeURIComponent(st)}`, `${st}: ${n}`))));
}
