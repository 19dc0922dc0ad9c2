// /ui/agents/{agent}/diff?a=&b=: the server's unified diff between two
// versions (a is the old side), added and removed lines marked by
// +/- and by <ins>/<del>, with a legend; colour only helps.

import { get, url } from '../api.js';
import { h, link, path, field, replace } from '../dom.js';
import { formError, pageError, announce } from '../ui.js';

export default async function diff(main, ctx) {
  const name = ctx.params.agent;
  const base = path('/ui/agents', name);
  const a = ctx.query.get('a') || '';
  const b = ctx.query.get('b') || '';
  const inputA = h('input', { type: 'number', name: 'a', min: '1', step: '1', required: true, value: a, testid: 'diff-select-a' });
  const inputB = h('input', { type: 'number', name: 'b', min: '1', step: '1', required: true, value: b, testid: 'diff-select-b' });
  const form = h('form', { class: 'panel row', testid: 'diff-form' },
    field('Old version (A)', inputA), field('New version (B)', inputB),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'diff-submit' }, 'Show diff'));
  const errors = formError(form);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    errors.clear();
    if (!inputA.value || !inputB.value) {
      errors.show(new Error('Enter both version numbers.'));
      return;
    }
    ctx.navigate(url(`${base}/diff`, { a: inputA.value, b: inputB.value }));
  });
  const legend = h('ul', { class: 'legend', testid: 'diff-legend', 'aria-label': 'Legend' },
    h('li', {}, h('ins', { class: 'sample' }, '+'), ' line added in B'),
    h('li', {}, h('del', { class: 'sample' }, '-'), ' line removed from A'),
    h('li', {}, h('span', { class: 'sample' }, '@@'), ' position in the configs (old and new line numbers)'));
  const view = h('div', {});
  main.append(ctx.heading(`Diff of ${name}`, a && b ? `: v${a} → v${b}` : ''),
    h('p', {}, link(base, `Back to ${name}`)), form, legend, view);
  if (!a || !b) {
    view.append(h('p', { class: 'empty' }, 'Choose two versions to compare.'));
    return;
  }
  try {
    const text = await get(path('/v1/agents', name, 'versions', a, 'diff', b), {}, 'text/x-diff, text/plain');
    replace(view, renderDiff(text, a, b));
    announce(`Diff of version ${a} and version ${b} shown.`);
  } catch (err) {
    replace(view, pageError(err));
  }
}

// renderDiff turns a unified diff into marked lines.
export function renderDiff(text, a, b) {
  const lines = String(text || '').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const body = lines.filter((l) => !l.startsWith('--- ') && !l.startsWith('+++ '));
  if (!body.some((l) => l.startsWith('+') || l.startsWith('-'))) {
    return h('p', { class: 'alert alert-info', testid: 'diff-empty' }, 'The two versions have the same config.');
  }
  const added = body.filter((l) => l.startsWith('+')).length;
  const removed = body.filter((l) => l.startsWith('-')).length;
  return h('div', {},
    h('p', {}, `${added} line${added === 1 ? '' : 's'} added, ${removed} removed.`),
    h('div', { class: 'diff', testid: 'diff-view', data: { a, b }, role: 'region', 'aria-label': `Diff from version ${a} to version ${b}`, tabindex: '0' },
      lines.map((l) => {
        if (l.startsWith('+++ ') || l.startsWith('--- ')) return h('span', { class: 'meta', testid: 'diff-line-ctx' }, l);
        if (l.startsWith('+')) return h('ins', { testid: 'diff-line-add' }, l);
        if (l.startsWith('-')) return h('del', { testid: 'diff-line-del' }, l);
        if (l.startsWith('@@')) return h('span', { class: 'hunk', testid: 'diff-line-hunk' }, l);
        return h('span', { testid: 'diff-line-ctx' }, l);
      })));
}
