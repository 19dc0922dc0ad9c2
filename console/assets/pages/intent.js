// /ui/intents/{id}: one intent, live or ended: its holder, scope, fence
// and expiry, and its release (with the fence shown here, after a
// confirmation). It follows the change feed's intent.* events, and reads
// the intent again when its countdown runs out (renewals are not in the
// feed).

import { request, send, url, ApiError } from '../api.js';
import { h, link, path, time, replace, dl, badge, json } from '../dom.js';
import { pageError, announce, busy, confirm } from '../ui.js';
import { scopeView, countdown, clockFrom, tick } from '../intent-view.js';

export default async function intent(main, ctx) {
  const id = ctx.params.id;
  const api = path('/v1/intents', id);
  main.append(ctx.heading(`Intent ${id}`));
  const load = async () => {
    const res = await request('GET', api);
    clockFrom(res.headers);
    return res.data;
  };
  let it = await load();

  const notices = h('div', {});
  const summary = h('div', { testid: 'intent-summary' });
  const release = h('button', { type: 'button', class: 'btn btn-danger', testid: 'intent-release' }, 'Release intent');

  function render() {
    summary.dataset.state = it.state;
    summary.dataset.fence = it.fence;
    const live = it.state === 'active';
    replace(summary, dl([
      ['State', h('span', { testid: 'intent-state' }, badge(it.state, live ? 'live' : it.state))],
      ['Holder', [it.holder, ' (', link(url('/ui/intents', { holder: it.holder }), `live intents of ${it.holder}`), ')']],
      ['Mode', it.mode === 'exclusive' ? 'exclusive: no other intent may overlap it' : 'advisory: overlaps only advisory intents'],
      ['Scope', [scopeView(it.scope), h('details', {}, h('summary', {}, 'Scope as JSON'), json(it.scope))]],
      ['Description', it.description || h('span', { class: 'muted' }, '—')],
      ['Fence', h('span', { testid: 'intent-fence', class: 'mono' }, String(it.fence))],
      ['TTL', `${it.ttl_ms / 1000} s`],
      live ? ['Expires', [countdown(it.expires_at), ' (', time(it.expires_at), ')']] : ['Ended', time(it.ended_at)],
      ['Created', [time(it.created_at), ` by ${it.created_by}`]],
    ]));
    release.hidden = !live;
  }

  async function refresh() {
    try {
      it = await load();
      render();
    } catch (err) {
      replace(notices, pageError(err));
    }
  }

  release.addEventListener('click', async () => {
    const answer = await confirm({
      title: `Release intent ${id}?`,
      message: `The intent ends now: writes under it with fence ${it.fence} are refused (stale_fence) and its scope is free for other agents. `
        + `${it.holder} is not told until its next renewal or write under it.`,
      action: 'Release',
    });
    if (!answer.ok) return;
    await busy(release, async () => {
      try {
        it = (await send('POST', `${api}/release`, { fence: it.fence })).data;
        render();
        const done = h('div', { class: 'alert alert-ok', role: 'status', tabindex: '-1', testid: 'intent-released' },
          h('p', {}, `Intent ${id} is ${it.state}.`));
        replace(notices, done);
        done.focus(); // the button it was started from is gone
        announce(`Intent ${id} released.`);
      } catch (err) {
        replace(notices, pageError(err instanceof ApiError && err.code === 'stale_fence'
          ? new ApiError(409, { ...err.fields, detail: 'The intent ended or changed meanwhile; it has been read again.' }) : err));
        await refresh();
      }
    });
  });

  render();
  main.append(notices, summary, h('div', { class: 'actions' }, release, link('/ui/intents', 'All live intents')));
  ctx.live({ actions: ['intent.registered', 'intent.released', 'intent.expired'] }, refresh);
  let readAt = 0;
  ctx.every(1000, () => {
    if (tick(summary) && Date.now() - readAt > 5000) {
      readAt = Date.now();
      refresh();
    }
  });
}
