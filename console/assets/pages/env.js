// /ui/agents/{agent}/envs/{env}: the pointer, its move history, the
// switch form (expected_revision from the pointer as shown: a 409
// revision_conflict is shown with the current revision and a reload),
// revocations, and the active release.

import { get, send, ApiError, url } from '../api.js';
import { h, link, path, time, table, replace, section, dl, field, badge } from '../dom.js';
import { pageError, formError, gated, announce, busy, confirm, pagedList } from '../ui.js';

export default async function env(main, ctx) {
  const { agent, env: envName } = ctx.params;
  const api = path('/v1/agents', agent, 'envs', envName);
  const agentPage = path('/ui/agents', agent);
  let pointer = null; // the pointer as last read
  // expectedRev is the revision the user decided on: set when the page
  // loads, on "reload" and after the user's own switch; live updates
  // show a moved pointer but leave it, so the server reports the conflict.
  let expectedRev = null;

  const summary = h('div', { testid: 'env-pointer' });
  const history = pagedList({
    testid: 'env-history',
    caption: 'Every move, newest first',
    fetchPage: (cursor) => get(`${api}/history`, { limit: 20, cursor }),
    empty: 'The pointer has not moved yet.',
    columns: [
      { label: 'Revision', class: 'num', cell: (m) => String(m.revision) },
      { label: 'Move', cell: (m) => (m.from_version ? `v${m.from_version} → v${m.to_version}` : `created at v${m.to_version}`) },
      { label: 'Action', cell: (m) => m.action },
      { label: 'Reason', cell: (m) => m.reason || '' },
      { label: 'By', cell: (m) => m.actor },
      { label: 'At', cell: (m) => time(m.at) },
    ],
  });
  const revoked = h('div', { testid: 'revoked' });
  const notices = h('div', {});

  // The switch form.
  const version = h('input', { type: 'number', name: 'version', min: '1', step: '1', required: true, testid: 'switch-version' });
  let versionPrefilled = false;
  const expected = h('input', { type: 'text', name: 'expected_revision', readOnly: true, testid: 'switch-expected-revision', class: 'narrow' });
  const reason = h('input', { type: 'text', name: 'reason', maxlength: '1024', testid: 'switch-reason' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'switch-submit' }, 'Switch pointer');
  const switchForm = h('form', { class: 'panel', testid: 'switch-form', novalidate: true },
    h('div', { class: 'row' }, field('Version', version), field('Expected revision', expected, 'The revision you loaded; the switch fails if the pointer moved since.'),
      field('Reason (optional)', reason)), h('div', { class: 'actions' }, submit));
  const switchErrors = formError(switchForm);
  switchForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    switchErrors.clear();
    const v = Number(version.value);
    if (!Number.isInteger(v) || v < 1) { switchErrors.show(new Error('Enter the version number to switch to.')); version.focus(); return; }
    await busy(submit, async () => {
      try {
        const res = await send('PUT', api, { version: v, expected_revision: expectedRev || 0, reason: reason.value.trim() || undefined });
        const notice = gated(res);
        if (notice) { replace(notices, notice); return; }
        reason.value = '';
        replace(notices);
        await load({ adopt: true });
        announce(`Pointer switched to version ${v}.`);
      } catch (err) {
        if (err instanceof ApiError && (err.code === 'revision_conflict' || err.code === 'precondition_failed')) {
          moved.hidden = true;
          switchErrors.show(err, conflictBox(err));
        } else {
          switchErrors.show(err);
        }
      }
    });
  });
  function conflictBox(err) {
    const current = err.fields.current_revision;
    const reload = h('button', { type: 'button', class: 'btn', testid: 'conflict-reload' }, 'Reload the pointer');
    reload.addEventListener('click', async () => {
      switchErrors.clear();
      await load({ adopt: true });
      announce(`Pointer reloaded: revision ${pointer ? pointer.revision : '?'}. Check it, then switch again.`);
      version.focus();
    });
    return h('div', { class: 'conflict', testid: 'conflict', data: { currentRevision: current } },
      h('p', {}, h('strong', {}, 'Someone else moved this pointer. '),
        `You expected revision ${expectedRev || 0}; it is now at revision ${current}. Nothing was changed. Reload to see the current pointer, then decide again.`),
      reload);
  }

  // The revoke form.
  const revokeVersion = h('input', { type: 'number', name: 'version', min: '1', step: '1', required: true, testid: 'revoke-version' });
  const revokeReason = h('input', { type: 'text', name: 'reason', maxlength: '1024', testid: 'revoke-reason' });
  const revokeSubmit = h('button', { type: 'submit', class: 'btn btn-danger', testid: 'revoke-submit' }, 'Revoke version');
  const revokeForm = h('form', { class: 'panel', testid: 'revoke-form', novalidate: true },
    h('div', { class: 'row' }, field('Version', revokeVersion, 'It will no longer be served in this env.'), field('Reason (optional)', revokeReason), revokeSubmit));
  const revokeErrors = formError(revokeForm);
  revokeForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    revokeErrors.clear();
    const v = Number(revokeVersion.value);
    if (!Number.isInteger(v) || v < 1) { revokeErrors.show(new Error('Enter the version number to revoke.')); return; }
    await busy(revokeSubmit, async () => {
      try {
        await send('POST', `${api}/revocations`, { version: v, reason: revokeReason.value.trim() || undefined });
        revokeVersion.value = '';
        revokeReason.value = '';
        await load();
        announce(`Version ${v} revoked in ${envName}.`);
      } catch (err) {
        revokeErrors.show(err);
      }
    });
  });

  async function lift(v, button) {
    const answer = await confirm({ title: `Lift the revocation of v${v}?`, message: `Version ${v} can be served in ${envName} again.`, action: 'Lift revocation', danger: false });
    if (!answer.ok) return;
    await busy(button, async () => {
      try {
        const res = await send('DELETE', `${api}/revocations/${encodeURIComponent(v)}`);
        const notice = gated(res);
        if (notice) { replace(notices, notice); return; }
        await load();
        announce(`Revocation of version ${v} lifted.`);
      } catch (err) {
        replace(notices, pageError(err));
      }
    });
  }

  const moved = h('p', { class: 'alert alert-warn', testid: 'pointer-moved', hidden: true });
  // Roll back: the pointer's default target (the newest older move, not
  // revoked); the version rolled away from is revoked. With an active
  // release, the release is rolled back.
  const rollback = h('button', { type: 'button', class: 'btn btn-danger', testid: 'env-rollback' }, 'Roll back');
  rollback.addEventListener('click', async () => {
    if (!pointer) return;
    const answer = await confirm({
      title: `Roll ${envName} back?`,
      message: pointer.release ? `The active release ${pointer.release.id} is rolled back: everyone gets v${pointer.release.baseline_version}.`
        : `The pointer moves from v${pointer.version} to the previous version in its history, and v${pointer.version} is revoked here.`,
      action: 'Roll back', withReason: true,
    });
    if (!answer.ok) return;
    await busy(rollback, async () => {
      try {
        const res = await send('POST', `${api}/rollback`, { expected_revision: expectedRev || pointer.revision, reason: answer.reason || undefined });
        const notice = gated(res);
        if (notice) { replace(notices, notice); return; }
        replace(notices);
        await load({ adopt: true });
        announce(`Rolled back from v${res.data.from_version} to v${res.data.to_version}.`);
      } catch (err) {
        replace(notices, err instanceof ApiError && err.code === 'revision_conflict'
          ? pageError(new ApiError(409, { ...err.fields, detail: `The pointer moved (now revision ${err.fields.current_revision}): reload it, check it, then roll back again.` }))
          : pageError(err.code === 'version_not_found'
            ? new ApiError(404, { ...err.fields, detail: 'There is no earlier version in the move history to roll back to (or it is revoked).' }) : err));
      }
    });
  });

  let historyFresh = true; // the list loads itself once; later loads refresh it
  const reloadHistory = async () => {
    if (!historyFresh) await history.reload();
    historyFresh = false;
  };

  async function load({ adopt = false } = {}) {
    try {
      pointer = await get(api);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        pointer = null;
        replace(summary, h('p', { class: 'empty' }, `There is no ${envName} pointer for ${agent} yet: switching creates it (expected revision 0).`));
        summary.dataset.revision = '0';
        if (adopt || expectedRev === null) expectedRev = 0;
        expected.value = String(expectedRev);
        replace(revoked);
        await reloadHistory();
        return;
      }
      throw err;
    }
    const p = pointer;
    summary.dataset.version = p.version;
    summary.dataset.revision = p.revision;
    if (adopt || expectedRev === null) expectedRev = p.revision;
    expected.value = String(expectedRev);
    moved.hidden = expectedRev === p.revision;
    moved.textContent = `The pointer moved to revision ${p.revision} (v${p.version}) since you loaded it at revision ${expectedRev}: a switch now will be refused. Reload the pointer first.`;
    // Prefilled once, at the first load: a later render (a live update)
    // never writes into the field, even cleared, while its user types.
    if (!versionPrefilled) { version.value = String(p.version); versionPrefilled = true; }
    replace(summary, dl([
      ['Version', link(url(agentPage, { version: p.version }), `v${p.version}`)],
      ['Revision', String(p.revision)],
      ['Updated', [time(p.updated_at), ` by ${p.updated_by}`]],
      ['Active release', p.release ? [link(path('/ui/releases', p.release.id), p.release.id, { testid: 'env-release-link' }), ' ', badge(p.release.state),
        ` v${p.release.baseline_version} → v${p.release.candidate_version} at ${p.release.percent}%`] : h('span', { class: 'muted' }, 'none')],
    ]), h('div', { class: 'actions' }, link(url('/ui/releases', { agent, env: envName }), p.release ? 'Releases of this env' : 'Start a release', { testid: 'env-start-release' }),
      ctx.session.role === 'admin' ? rollback : null));
    await reloadHistory();
    replace(revoked, table({
      caption: 'Versions not served in this env',
      items: (p.revoked || []).slice().sort((x, y) => y - x),
      empty: 'No version is revoked here.',
      rowProps: (v) => ({ testid: 'revoked-row', data: { version: v } }),
      columns: [
        { label: 'Version', class: 'num', cell: (v) => `v${v}` },
        { label: 'Action', rowHeader: false, cell: (v) => {
          const b = h('button', { type: 'button', class: 'btn btn-small', testid: 'lift-revocation', 'aria-label': `Lift the revocation of version ${v}` }, 'Lift');
          b.addEventListener('click', () => lift(v, b));
          return b;
        } },
      ],
    }));
  }

  main.append(ctx.heading(`${agent} in ${envName}`), h('p', {}, link(agentPage, `Back to ${agent}`)), notices,
    section('Pointer', null, summary),
    ctx.session.role === 'admin' ? section('Switch the pointer', null, moved, switchForm) : null,
    section('Move history', null, history.el),
    section('Revocations', null, revoked, ctx.session.role === 'admin' ? revokeForm : null));
  try {
    await load();
  } catch (err) {
    if (err.status === 401) throw err;
    replace(summary, pageError(err));
  }
  ctx.live({ actions: ['pointer.switched', 'version.revoked', 'version.unrevoked', 'release.created', 'release.promoted', 'release.rolled_back',
    'release.paused', 'release.resumed', 'release.percent_changed', 'env.rolled_back'], agent, env: envName },
  async () => { await load().catch(() => {}); });
}
