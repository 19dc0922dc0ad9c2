// /ui/agents/{agent}: the agent's versions (a page at a time), one
// version's config rendered readably (?version=N, default the latest),
// its env pointers, and the choice of two versions to diff.

import { get, send, url } from '../api.js';
import { h, link, path, time, table, replace, section, dl } from '../dom.js';
import { pagedList, pageError, announce, busy } from '../ui.js';
import { renderConfig } from './config.js';

export default async function agent(main, ctx) {
  const name = ctx.params.agent;
  const base = path('/ui/agents', name);
  const chosen = { a: null, b: null };
  const shown = ctx.query.get('version') ? Number(ctx.query.get('version')) : null; // the version whose config is shown
  const compare = h('button', { type: 'button', class: 'btn btn-primary', testid: 'diff-compare', disabled: true }, 'Compare selected versions');
  const chosenText = h('span', { class: 'muted', 'aria-live': 'polite' }, 'Choose an old (A) and a new (B) version.');
  const updateCompare = () => {
    compare.disabled = !(chosen.a && chosen.b && chosen.a !== chosen.b);
    chosenText.textContent = chosen.a || chosen.b ? `A: ${chosen.a ? `v${chosen.a}` : '—'}, B: ${chosen.b ? `v${chosen.b}` : '—'}` : 'Choose an old (A) and a new (B) version.';
  };
  compare.addEventListener('click', () => ctx.navigate(url(`${base}/diff`, { a: chosen.a, b: chosen.b })));
  const radio = (side, v) => {
    const input = h('input', { type: 'radio', name: `diff-${side}`, value: String(v.version), testid: `diff-${side}`,
      'aria-label': `Version ${v.version} as ${side === 'a' ? 'old side (A)' : 'new side (B)'}`, checked: chosen[side] === v.version });
    input.addEventListener('change', () => { chosen[side] = v.version; updateCompare(); });
    return input;
  };

  const versions = pagedList({
    testid: 'versions',
    caption: 'Versions, newest first',
    fetchPage: (cursor) => get(path('/v1/agents', name, 'versions'), { limit: 20, cursor }),
    rowProps: (v) => ({ testid: 'version-row', data: { version: v.version }, class: shown === v.version ? 'current' : null, 'aria-current': shown === v.version ? 'true' : null }),
    columns: [
      { label: 'Version', class: 'num', cell: (v) => link(url(base, { version: v.version }), `v${v.version}`, { testid: 'version-view' }) },
      { label: 'A', cell: (v) => radio('a', v) },
      { label: 'B', cell: (v) => radio('b', v) },
      { label: 'Message', cell: (v) => v.message || h('span', { class: 'muted' }, '—') },
      { label: 'By', cell: (v) => v.created_by },
      { label: 'Created', cell: (v) => time(v.created_at) },
    ],
  });

  const configRegion = h('div', { testid: 'config-view' });
  const envsRegion = h('div', { testid: 'envs' });

  async function loadConfig() {
    const want = ctx.query.get('version');
    try {
      const v = want ? await get(path('/v1/agents', name, 'versions', want))
        : (await get(path('/v1/agents', name, 'versions'), { limit: 1 })).items[0];
      if (!v) { replace(configRegion, h('p', { class: 'empty' }, 'This agent has no versions.')); return; }
      configRegion.dataset.version = v.version;
      const newDraft = ctx.session && ctx.session.role === 'admin' ? h('button', { type: 'button', class: 'btn btn-primary', testid: 'draft-new' }, `New draft from v${v.version}`) : null;
      if (newDraft) {
        newDraft.addEventListener('click', () => busy(newDraft, async () => {
          try {
            const res = await send('POST', path('/v1/agents', name, 'drafts'), { base_version: v.version });
            ctx.navigate(path(base, 'drafts', res.data.id));
          } catch (err) {
            newDraft.after(pageError(err));
          }
        }));
      }
      replace(configRegion, h('h2', {}, `Version ${v.version}`, want ? '' : ' (latest)'), newDraft,
        dl([['Message', v.message || '—'], ['Created by', v.created_by], ['Created', time(v.created_at)],
          ['Content hash', h('code', {}, v.content_hash)]]),
        renderConfig(v.config));
    } catch (err) {
      replace(configRegion, pageError(err));
    }
  }

  async function loadEnvs() {
    try {
      const bundle = await get('/v1/bundle', { agents: name });
      const envs = Object.entries(((bundle.agents || {})[name] || {}).envs || {}).sort(([a], [b]) => a.localeCompare(b));
      replace(envsRegion, table({
        caption: 'Where each env points',
        items: envs,
        empty: 'No env points at this agent yet.',
        rowProps: ([env, e]) => ({ testid: 'env-row', data: { env, version: e.version } }),
        columns: [
          { label: 'Env', cell: ([env]) => link(path(base, 'envs', env), env, { testid: 'env-link' }) },
          { label: 'Version', class: 'num', cell: ([, e]) => link(url(base, { version: e.version }), `v${e.version}`) },
          { label: 'Revision', class: 'num', cell: ([, e]) => String(e.revision) },
          { label: 'Release', cell: ([, e]) => (e.release ? link(path('/ui/releases', e.release.id), `${e.release.state}: v${e.release.candidate_version} at ${e.release.basis_points / 100}%`) : h('span', { class: 'muted' }, 'none')) },
          { label: 'Revoked', cell: ([, e]) => (e.revoked && e.revoked.length ? e.revoked.map((n) => `v${n}`).join(', ') : h('span', { class: 'muted' }, 'none')) },
        ],
      }));
    } catch (err) {
      replace(envsRegion, pageError(err));
    }
  }

  // The caller's drafts of this agent (admin only: drafts are authoring).
  const drafts = ctx.session && ctx.session.role === 'admin' ? pagedList({
    testid: 'drafts',
    caption: 'Your drafts of this agent',
    empty: 'No drafts: start one from a version.',
    fetchPage: (cursor) => get(path('/v1/agents', name, 'drafts'), { limit: 20, cursor }),
    rowProps: (d) => ({ testid: 'draft-row', data: { draft: d.id } }),
    columns: [
      { label: 'Draft', cell: (d) => link(path(base, 'drafts', d.id), d.id, { testid: 'draft-link' }) },
      { label: 'Base', class: 'num', cell: (d) => `v${d.base_version}` },
      { label: 'Saved', cell: (d) => time(d.updated_at) },
    ],
  }) : null;

  main.append(ctx.heading(`Agent ${name}`));
  await get(path('/v1/agents', name, 'versions'), { limit: 1 }); // unknown or out of scope: one error for the page
  main.append(
    h('div', { class: 'cols' },
      h('div', {}, section('Env pointers', null, envsRegion),
        section('Versions', null, versions.el, h('div', { class: 'actions' }, compare, chosenText)),
        drafts ? section('Drafts', null, drafts.el) : null),
      h('div', {}, configRegion)));
  await Promise.all([versions.ready, loadConfig(), loadEnvs(), drafts ? drafts.ready : null]);
  ctx.live({ actions: ['version.created', 'pointer.switched', 'version.revoked', 'version.unrevoked', 'release.created',
    'release.percent_changed', 'release.promoted', 'release.rolled_back', 'release.paused', 'release.resumed', 'env.rolled_back'], agent: name },
  async () => { await Promise.all([versions.reload(), loadEnvs()]); announce('Agent updated.'); });
}
