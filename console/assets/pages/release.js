// /ui/releases/{id}: one release: its state, the ramp (slider and
// number, applied with the release's revision), pause, resume, promote
// and roll back (confirmed in a dialog), each arm's exposures and
// outcomes, the guard's state and the transitions.

import { get, send, ApiError } from '../api.js';
import { h, link, path, time, table, replace, section, dl, field, badge } from '../dom.js';
import { pageError, formError, gated, announce, busy, confirm } from '../ui.js';

export default async function release(main, ctx) {
  const id = ctx.params.id;
  const api = path('/v1/releases', id);
  main.append(ctx.heading(`Release ${id}`));
  let rel = await get(api);
  const admin = ctx.session.role === 'admin';

  const summary = h('div', { testid: 'release-summary' });
  const actions = h('div', { class: 'actions' });
  const notices = h('div', {});
  const arms = h('div', { testid: 'arms' });
  const guard = h('div', {});
  const historyEl = h('div', { testid: 'release-history' });

  // The ramp: a slider and a number kept in step, applied together.
  const slider = h('input', { type: 'range', name: 'percent_slider', min: '0', max: '100', step: '1', testid: 'ramp-slider' });
  const number = h('input', { type: 'number', name: 'percent', min: '0', max: '100', step: '0.01', required: true, testid: 'ramp-number', class: 'narrow' });
  slider.addEventListener('input', () => { number.value = slider.value; slider.setAttribute('aria-valuetext', `${slider.value} percent`); });
  number.addEventListener('input', () => { if (number.value !== '') slider.value = String(Math.round(Number(number.value))); });
  const rampSubmit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'ramp-submit' }, 'Apply percent');
  const rampForm = h('form', { class: 'panel', testid: 'ramp-form', novalidate: true },
    h('div', { class: 'row' }, field('Candidate percent (slider)', slider), field('Candidate percent', number, '0 to 100, up to 2 decimals.'), rampSubmit),
    h('p', { class: 'hint' }, 'Changing the percent cancels the remaining scheduled steps.'));
  const rampErrors = formError(rampForm);
  let rampDirty = false;
  slider.addEventListener('input', () => { rampDirty = true; });
  number.addEventListener('input', () => { rampDirty = true; });
  rampForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    rampErrors.clear();
    const percent = Number(number.value);
    if (number.value === '' || !(percent >= 0 && percent <= 100)) { rampErrors.show(new Error('The percent is a number from 0 to 100.')); number.focus(); return; }
    await busy(rampSubmit, () => write('PATCH', api, { percent, expected_revision: rel.revision }, `Candidate percent set to ${percent}%.`, rampErrors));
    rampDirty = false;
  });

  // write sends a change with the release's revision; a conflict reloads.
  async function write(method, to, body, done, errors) {
    try {
      const res = await send(method, to, body);
      const notice = gated(res);
      if (notice) replace(notices, notice);
      else { replace(notices); announce(done); }
      await load();
    } catch (err) {
      const box = errors || { show: (e) => replace(notices, pageError(e)) };
      if (err instanceof ApiError && err.code === 'revision_conflict') {
        await load();
        box.show(new ApiError(409, { ...err.fields, detail: `The release changed meanwhile (now revision ${err.fields.current_revision}); it has been reloaded: check it and try again.` }));
      } else {
        box.show(err);
      }
    }
  }

  function transition(act, label, { confirmWith } = {}) {
    const b = h('button', { type: 'button', class: act === 'rollback' ? 'btn btn-danger' : (act === 'promote' ? 'btn btn-primary' : 'btn'), testid: `release-${act}` }, label);
    b.addEventListener('click', async () => {
      let reason;
      if (confirmWith) {
        const answer = await confirm({ ...confirmWith, withReason: true });
        if (!answer.ok) { b.focus(); return; }
        reason = answer.reason || undefined;
      }
      const done = { pause: 'paused', resume: 'resumed', promote: 'promoted', rollback: 'rolled back' }[act];
      await busy(b, () => write('POST', `${api}/${act}`, { expected_revision: rel.revision, reason }, `Release ${done}.`));
    });
    return b;
  }

  const rampSection = admin ? section('Ramp', null, rampForm) : h('div', {});
  function render() {
    const r = rel;
    summary.dataset.state = r.state;
    summary.dataset.percent = r.percent;
    summary.dataset.revision = r.revision;
    replace(summary, dl([
      ['State', h('span', { testid: 'release-state' }, badge(r.state))],
      ['Agent, env', link(path('/ui/agents', r.agent, 'envs', r.env), `${r.agent} in ${r.env}`)],
      ['Baseline', link(`${path('/ui/agents', r.agent)}?version=${r.baseline_version}`, `v${r.baseline_version}`)],
      ['Candidate', [link(`${path('/ui/agents', r.agent)}?version=${r.candidate_version}`, `v${r.candidate_version}`), ' (',
        link(`${path('/ui/agents', r.agent, 'diff')}?a=${r.baseline_version}&b=${r.candidate_version}`, 'diff'), ')']],
      ['Candidate percent', [h('meter', { min: '0', max: '100', value: String(r.percent), 'aria-label': 'Candidate percent' }), ` ${r.percent}%`]],
      ['Stickiness', r.stickiness],
      ['Steps', r.steps && r.steps.length ? h('ol', { class: 'steps', testid: 'release-steps' }, r.steps.map((st, i) =>
        h('li', { data: { applied: String(i < r.steps_applied) } }, st.promote ? `promote after ${st.after}` : `${st.percent}% after ${st.after}`,
          i < r.steps_applied ? ' (applied)' : ''))) : 'none'],
      r.next_step_at ? ['Next step', time(r.next_step_at)] : null,
      ['Revision', String(r.revision)],
      ['Message', r.message || '—'],
      ['Created', [time(r.created_at), ` by ${r.created_by}`]],
    ]));
    const active = r.state === 'running' || r.state === 'paused';
    rampSection.hidden = !active || !admin;
    if (!rampDirty) { number.value = String(r.percent); slider.value = String(Math.round(r.percent)); }
    replace(actions, admin && active ? [
      r.state === 'running' ? transition('pause', 'Pause') : transition('resume', 'Resume'),
      transition('promote', 'Promote', { confirmWith: { title: 'Promote the candidate?', message: `The ${r.env} pointer moves to v${r.candidate_version} for everyone and the release ends.`, action: 'Promote', danger: false } }),
      transition('rollback', 'Roll back', { confirmWith: { title: 'Roll the release back?', message: `Everyone gets v${r.baseline_version}; v${r.candidate_version} is revoked in ${r.env} and the release ends.`, action: 'Roll back' } }),
    ] : null);
    renderGuard(r);
    replace(historyEl, table({
      caption: 'Transitions, oldest first',
      items: r.history || [],
      columns: [
        { label: 'Revision', class: 'num', cell: (t) => String(t.revision) },
        { label: 'Action', cell: (t) => t.action },
        { label: 'State', cell: (t) => (t.from ? `${t.from} → ${t.to}` : t.to) },
        { label: 'Percent', class: 'num', cell: (t) => `${t.percent}%` },
        { label: 'Reason', cell: (t) => t.reason || '' },
        { label: 'By', cell: (t) => t.actor },
        { label: 'At', cell: (t) => time(t.at) },
      ],
    }));
  }

  function renderGuard(r) {
    const g = r.guard;
    if (!g) { replace(guard, h('p', { testid: 'guard-state', data: { state: 'none' } }, 'No guard: nothing pauses or rolls back this release by itself.')); return; }
    const unit = g.metric === 'failure_rate' ? ' points' : '';
    replace(guard, dl([
      ['State', h('span', { testid: 'guard-state', data: { state: g.state } }, badge(g.state))],
      ['Watches', `${g.metric === 'failure_rate' ? 'failure rate' : 'score'}: trips when the candidate is worse by more than ${g.max_degradation}${unit} at ${Math.round(g.confidence * 100)}% confidence`],
      ['On trip', g.action === 'rollback' ? 'roll back' : 'pause'],
      ['Min samples per arm', String(g.min_samples)],
      ['Gates steps', g.gate_steps ? 'yes' : 'no'],
      ['Since', time(g.since)],
      g.decided_at ? ['Decided', time(g.decided_at)] : null,
      g.reason ? ['Reason', g.reason] : null,
    ]));
  }

  async function renderArms(r) {
    const exposures = await exposureTotals(r).catch(() => null);
    const stats = r.stats || {};
    const row = (arm, version) => ({ arm, version, s: stats[arm] || null, exposed: exposures ? exposures[arm] || 0 : null });
    const fmt = (n, digits = 2) => (n === null || n === undefined ? '—' : Number(n).toFixed(digits));
    replace(arms, table({
      caption: 'Arms: exposures in the last hour, outcomes since the guard started',
      items: [row('baseline', r.baseline_version), row('candidate', r.candidate_version)],
      rowProps: (a) => ({ testid: 'arm-row', data: { arm: a.arm } }),
      columns: [
        { label: 'Arm', cell: (a) => a.arm },
        { label: 'Version', class: 'num', cell: (a) => `v${a.version}` },
        { label: 'Exposures', class: 'num', cell: (a) => h('span', { testid: 'arm-exposures' }, a.exposed === null ? 'unavailable' : String(a.exposed)) },
        { label: 'Outcomes', class: 'num', cell: (a) => h('span', { testid: 'arm-outcomes' }, a.s ? String(a.s.n) : '0') },
        { label: 'Failures', class: 'num', cell: (a) => (a.s ? String(a.s.failures) : '0') },
        { label: 'Failure rate', class: 'num', cell: (a) => h('span', { testid: 'arm-failure-rate' }, a.s && a.s.n ? `${fmt(a.s.rate)}%` : '—') },
        { label: 'Rate interval', class: 'num', cell: (a) => (a.s && a.s.n && a.s.interval ? `${fmt(a.s.interval[0])}% to ${fmt(a.s.interval[1])}%` : '—') },
        { label: 'Mean score', class: 'num', cell: (a) => (a.s && a.s.score_mean !== null && a.s.score_mean !== undefined ? fmt(a.s.score_mean, 3) : '—') },
      ],
    }), byToken(stats.by_token), stats.difference ? h('p', {}, `Degradation (candidate vs baseline): ${fmt(stats.difference.estimate)} (interval ${fmt(stats.difference.lower)} to ${fmt(stats.difference.upper)}).`) : null);
  }

  // byToken: the outcome figures per reporting token, when more than one reports.
  function byToken(tokens) {
    const rows = Object.entries(tokens || {});
    if (rows.length < 2) return null;
    const rate = (s) => (s && s.n ? `${Number(s.rate).toFixed(2)}% of ${s.n}` : '—');
    return h('details', { class: 'by-token' }, h('summary', {}, `Outcomes by reporting token (${rows.length})`), table({
      caption: 'Failure rate per reporting token',
      items: rows.sort(([a], [b]) => a.localeCompare(b)),
      rowProps: ([name]) => ({ testid: 'token-stats-row', data: { token: name } }),
      columns: [
        { label: 'Token', cell: ([name]) => name },
        { label: 'Baseline', class: 'num', cell: ([, t]) => rate(t.baseline) },
        { label: 'Candidate', class: 'num', cell: ([, t]) => rate(t.candidate) },
      ],
    }));
  }

  async function load() {
    rel = await get(api);
    render();
    await renderArms(rel);
  }

  main.append(notices, summary, actions,
    rampSection,
    section('Arms', null, arms), section('Guard', null, guard), section('History', null, historyEl));
  render();
  await renderArms(rel);
  const refresh = () => load().catch((err) => replace(notices, pageError(err)));
  ctx.live({ actions: ['release.percent_changed', 'release.step_applied', 'release.paused', 'release.resumed', 'release.promoted',
    'release.rolled_back', 'release.guard_tripped', 'release.guard_changed', 'env.rolled_back'], agent: rel.agent, env: rel.env }, refresh);
  ctx.every(10000, () => { if (rel.state === 'running' || rel.state === 'paused') refresh(); });
}

// exposureTotals sums the arms' exposures of this release over the last
// hour (at most a few pages: the list is per minute).
async function exposureTotals(r) {
  const totals = { baseline: 0, candidate: 0 };
  const hourAgo = new Date(Date.now() - 3600e3);
  // Exposures are counted per minute: start at the minute the release began in.
  const start = Math.max(hourAgo.getTime(), new Date(r.created_at).getTime());
  const from = new Date(start - (start % 60000)).toISOString();
  let cursor = '';
  for (let page = 0; page < 5; page += 1) {
    const res = await get(path('/v1/agents', r.agent, 'envs', r.env, 'exposures'), { from, limit: 500, cursor });
    for (const it of res.items) if (it.release_id === r.id && it.arm) totals[it.arm] += it.count;
    if (!res.next) break;
    cursor = res.next;
  }
  return totals;
}
