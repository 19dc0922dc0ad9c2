// /ui/releases?agent=&env=: the releases of one agent and env (the API
// lists them per env), newest first, and the form starting one.

import { get, send, url, idempotencyKey } from '../api.js';
import { h, link, path, time, field, section, badge, uid } from '../dom.js';
import { pagedList, formError, gated, announce, busy } from '../ui.js';

export default async function releases(main, ctx) {
  const agent = ctx.query.get('agent') || '';
  const env = ctx.query.get('env') || '';
  main.append(ctx.heading('Releases'), filterForm(ctx, agent, env));
  if (!agent || !env) {
    main.append(h('p', { class: 'muted' }, 'Choose an agent and an env to see their releases and start one.'));
    if (ctx.session.role === 'admin' && !ctx.session.scopes) await recent(main, ctx);
    return;
  }
  const list = pagedList({
    testid: 'releases',
    caption: `Releases of ${agent} in ${env}, newest first`,
    fetchPage: (cursor) => get(path('/v1/agents', agent, 'envs', env, 'releases'), { limit: 20, cursor }),
    rowProps: (r) => ({ testid: 'release-row', data: { releaseId: r.id, state: r.state } }),
    empty: 'No release yet in this env.',
    columns: [
      { label: 'Release', cell: (r) => link(path('/ui/releases', r.id), r.id, { testid: 'release-link' }) },
      { label: 'State', cell: (r) => badge(r.state) },
      { label: 'Baseline → candidate', cell: (r) => `v${r.baseline_version} → v${r.candidate_version}` },
      { label: 'Percent', class: 'num', cell: (r) => `${r.percent}%` },
      { label: 'Message', cell: (r) => r.message || '' },
      { label: 'By', cell: (r) => r.created_by },
      { label: 'Created', cell: (r) => time(r.created_at) },
    ],
  });
  main.append(h('p', {}, link(path('/ui/agents', agent, 'envs', env), `The ${env} pointer of ${agent}`)),
    section(`Releases of ${agent} in ${env}`, null, list.el));
  if (ctx.session.role === 'admin') main.append(section('Start a release', null, startForm(ctx, agent, env)));
  await list.ready;
  ctx.live({ actions: ['release.created', 'release.percent_changed', 'release.step_applied', 'release.paused', 'release.resumed',
    'release.promoted', 'release.rolled_back', 'release.guard_tripped', 'env.rolled_back'], agent, env }, list.reload);
}

function filterForm(ctx, agent, env) {
  const agentInput = h('input', { type: 'text', name: 'agent', required: true, value: agent, testid: 'releases-agent', list: uid('agents'), autocomplete: 'off' });
  const options = h('datalist', { id: agentInput.getAttribute('list') });
  get('/v1/agents', { limit: 100 }).then((res) => options.append(...res.items.map((a) => h('option', { value: a.agent })))).catch(() => {});
  const envInput = h('input', { type: 'text', name: 'env', required: true, value: env, testid: 'releases-env' });
  const form = h('form', { class: 'panel row', testid: 'releases-filter' }, field('Agent', agentInput), options, field('Env', envInput),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'releases-submit' }, 'Show releases'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(url('/ui/releases', { agent: agentInput.value.trim(), env: envInput.value.trim() }));
  });
  return form;
}

function startForm(ctx, agent, env) {
  const candidate = h('input', { type: 'number', name: 'candidate_version', min: '1', step: '1', required: true, testid: 'start-candidate' });
  const percent = h('input', { type: 'number', name: 'percent', min: '0', max: '100', step: '0.01', value: '10', required: true, testid: 'start-percent' });
  const stickiness = h('select', { name: 'stickiness', testid: 'start-stickiness' },
    h('option', { value: 'user' }, 'user (the same user stays in one arm)'), h('option', { value: 'session' }, 'session'));
  const message = h('input', { type: 'text', name: 'message', maxlength: '4096', testid: 'start-message' });
  const steps = h('input', { type: 'text', name: 'steps', testid: 'start-steps', class: 'wide', placeholder: '25 after 10m, 50 after 1h, promote after 1h' });
  const guardOn = h('input', { type: 'checkbox', id: uid('f'), testid: 'start-guard' });
  const metric = h('select', { name: 'metric', testid: 'start-guard-metric' }, h('option', { value: 'failure_rate' }, 'failure rate'), h('option', { value: 'score' }, 'score'));
  const maxDeg = h('input', { type: 'number', name: 'max_degradation', min: '0', step: 'any', value: '2', testid: 'start-guard-max' });
  const minSamples = h('input', { type: 'number', name: 'min_samples', min: '1', step: '1', value: '200', testid: 'start-guard-min-samples' });
  const action = h('select', { name: 'action', testid: 'start-guard-action' }, h('option', { value: 'pause' }, 'pause'), h('option', { value: 'rollback' }, 'roll back'));
  const guardFields = h('div', { class: 'row', hidden: true },
    field('Metric', metric), field('Max degradation', maxDeg, 'Failure rate: percentage points; score: 0..1.'),
    field('Min samples per arm', minSamples), field('On trip', action));
  guardOn.addEventListener('change', () => { guardFields.hidden = !guardOn.checked; });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'start-submit' }, 'Start release');
  const result = h('div', {});
  const form = h('form', { class: 'panel', testid: 'start-release-form', novalidate: true },
    h('p', { class: 'hint' }, `The baseline is the version the ${env} pointer names now.`),
    h('div', { class: 'row' }, field('Candidate version', candidate), field('Percent in the candidate arm', percent), field('Stickiness', stickiness)),
    field('Message (optional)', message),
    field('Steps (optional)', steps, 'Comma-separated "<percent> after <duration>", the last may be "promote after <duration>"; durations like 10m, 1h.'),
    h('fieldset', {}, h('legend', {}, 'Guard'),
      h('div', { class: 'check' }, guardOn, h('label', { for: guardOn.id }, 'Pause or roll back automatically when the candidate does worse')),
      guardFields),
    h('div', { class: 'actions' }, submit), result);
  const errors = formError(form);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errors.clear();
    const body = { candidate_version: Number(candidate.value), percent: Number(percent.value), stickiness: stickiness.value, message: message.value.trim() || undefined };
    if (!Number.isInteger(body.candidate_version) || body.candidate_version < 1) { errors.show(new Error('Enter the candidate version.')); candidate.focus(); return; }
    if (percent.value === '' || !(body.percent >= 0 && body.percent <= 100)) { errors.show(new Error('The percent is a number from 0 to 100.')); percent.focus(); return; }
    if (steps.value.trim()) {
      try {
        body.steps = parseSteps(steps.value);
      } catch (err) {
        errors.show(err);
        steps.focus();
        return;
      }
    }
    if (guardOn.checked) {
      body.guard = { metric: metric.value, max_degradation: Number(maxDeg.value), min_samples: Number(minSamples.value), confidence: 0.95, action: action.value, gate_steps: true };
    }
    await busy(submit, async () => {
      try {
        const res = await send('POST', path('/v1/agents', agent, 'envs', env, 'releases'), body, { 'Idempotency-Key': idempotencyKey() });
        const notice = gated(res);
        if (notice) { result.replaceChildren(notice); return; }
        announce(`Release ${res.data.id} started.`);
        ctx.navigate(path('/ui/releases', res.data.id));
      } catch (err) {
        const active = err.code === 'release_active' && err.fields.release_id;
        errors.show(err, active ? h('p', {}, link(path('/ui/releases', err.fields.release_id), `Open the active release ${err.fields.release_id}`)) : null);
      }
    });
  });
  return form;
}

// parseSteps reads "25 after 10m, promote after 1h" into the API's steps.
export function parseSteps(text) {
  return text.split(',').map((part) => part.trim()).filter(Boolean).map((part) => {
    const m = /^(promote|\d+(?:\.\d{1,2})?)\s*%?\s+after\s+(\S+)$/i.exec(part);
    if (!m) throw new Error(`Step "${part}" is not "<percent> after <duration>" or "promote after <duration>".`);
    return m[1].toLowerCase() === 'promote' ? { promote: true, after: m[2] } : { percent: Number(m[1]), after: m[2] };
  });
}

// recent lists the releases created lately, everywhere, from the audit
// log (the API lists releases per agent and env only).
async function recent(main, ctx) {
  const list = pagedList({
    testid: 'recent-releases',
    caption: 'Releases created, newest first',
    fetchPage: (cursor) => get('/v1/audit', { action: 'release.created', order: 'desc', limit: 50, cursor }),
    empty: 'No release has been started yet.',
    columns: [
      { label: 'Release', cell: (e) => link(path('/ui/releases', releaseOf(e)), releaseOf(e), { testid: 'release-link' }) },
      { label: 'Baseline → candidate', cell: (e) => `v${e.details.baseline_version} → v${e.details.candidate_version}` },
      { label: 'Started at', class: 'num', cell: (e) => `${e.details.percent}%` },
      { label: 'By', cell: (e) => e.actor },
      { label: 'Created', cell: (e) => time(e.at) },
    ],
  });
  main.append(section('Recently started', null, list.el));
  await list.ready;
  ctx.live({ actions: ['release.created'] }, list.reload);
}

function releaseOf(e) {
  return (e.details && e.details.release_id) || String(e.resource || '').replace(/^releases\//, '');
}
