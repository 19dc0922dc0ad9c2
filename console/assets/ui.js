// Shared pieces of the pages: announcements, lists with cursors, form
// errors, the confirm dialog, gated-write notices, secrets shown once.

import { ApiError } from './api.js';
import { h, replace, table, link, uid } from './dom.js';

// announce says message in the polite live region.
export function announce(message) {
  const status = document.getElementById('status');
  if (!status) return;
  status.textContent = '';
  setTimeout(() => { status.textContent = message; }, 50);
}

// problemText is a readable sentence for an error.
export function problemText(err) {
  if (err instanceof ApiError) return err.code && err.code !== 'http_error' ? `${err.detail} (${err.code})` : err.detail;
  return String(err && err.message ? err.message : err);
}

// pageError renders an error for a whole page or region.
export function pageError(err) {
  announce(problemText(err));
  const code = err instanceof ApiError ? err.code : 'error';
  return h('div', { class: 'alert alert-error', role: 'alert', testid: 'page-error', data: { code } },
    h('p', {}, problemText(err)));
}

// pagedList is a list region that pages with the API's cursors.
// fetchPage(cursor) answers {items, next}; columns as for table().
export function pagedList({ testid, caption, columns, fetchPage, rowProps, empty }) {
  const body = h('div', { class: 'list-body' });
  const prev = h('button', { type: 'button', class: 'btn', testid: 'pager-prev' }, 'Previous page');
  const next = h('button', { type: 'button', class: 'btn', testid: 'pager-next' }, 'Next page');
  const pos = h('span', { class: 'muted pager-pos' });
  const region = h('div', { class: 'list', testid, 'aria-busy': 'false' }, body,
    h('div', { class: 'pager' }, prev, pos, next));
  const cursors = ['']; // cursors[i] loads page i+1
  let page = 0;
  let nextCursor = null;

  async function load() {
    region.setAttribute('aria-busy', 'true');
    region.dataset.loaded = 'false';
    try {
      const res = await fetchPage(cursors[page]);
      nextCursor = res.next || null;
      replace(body, table({ caption, columns, items: res.items || [], rowProps, empty, testid }));
    } catch (err) {
      replace(body, pageError(err));
    }
    prev.hidden = page === 0;
    next.hidden = !nextCursor;
    pos.textContent = page > 0 || nextCursor ? `Page ${page + 1}` : '';
    region.setAttribute('aria-busy', 'false');
    region.dataset.loaded = 'true';
  }
  next.addEventListener('click', async () => {
    if (!nextCursor) return;
    cursors[page + 1] = nextCursor;
    page += 1;
    await load();
    if (next.hidden) prev.focus(); // keep focus in the pager on the last page
    announce(`Page ${page + 1} shown.`);
  });
  prev.addEventListener('click', async () => {
    if (page === 0) return;
    page -= 1;
    await load();
    if (prev.hidden) next.focus();
    announce(`Page ${page + 1} shown.`);
  });
  const ready = load();
  return { el: region, reload: load, ready };
}

// formError attaches an error area to a form: show(err) fills it,
// announces it and marks the field the problem names; clear() empties it.
export function formError(form) {
  const el = h('div', { class: 'alert alert-error', role: 'alert', testid: 'form-error', id: uid('err'), hidden: true });
  form.prepend(el);
  form.setAttribute('aria-describedby', el.id);
  let marked = null;
  return {
    el,
    show(err, extra) {
      replace(el, h('p', {}, problemText(err)), extra);
      el.hidden = false;
      announce(problemText(err));
      el.dataset.code = err instanceof ApiError ? err.code : 'error';
      const name = err instanceof ApiError && err.fields.field ? String(err.fields.field).split(/[.[]/)[0] : '';
      const control = name && form.elements.namedItem(name);
      if (control && control.setAttribute) {
        control.setAttribute('aria-invalid', 'true');
        const ids = (control.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
        if (!ids.includes(el.id)) control.setAttribute('aria-describedby', [...ids, el.id].join(' '));
        marked = control;
      }
    },
    clear() {
      el.hidden = true;
      el.replaceChildren();
      if (marked) marked.removeAttribute('aria-invalid');
      marked = null;
    },
  };
}

// gated renders the notice for a write a protected env turned into a
// change request (202), or null for any other answer.
export function gated(res) {
  if (!res || res.status !== 202 || !res.data || !res.data.change_request) return null;
  const cr = res.data.change_request;
  announce(`Change request ${cr.id} created: it needs approval before it applies.`);
  return h('div', { class: 'alert alert-info', role: 'status', testid: 'change-request-notice', data: { crId: cr.id } },
    h('p', {}, `This env is protected: the change waits for approval as change request ${cr.id} (${cr.action}). `,
      link('/ui/change-requests', 'Open change requests', { testid: 'change-request-link' })));
}

// secretOnce shows a secret that the server will never show again.
export function secretOnce(label, secret) {
  const code = h('code', { testid: 'secret-value', class: 'secret' }, secret || '(redacted: this was a replay)');
  const copy = h('button', { type: 'button', class: 'btn', on: { click: async () => {
    try { await navigator.clipboard.writeText(secret); announce('Secret copied.'); } catch { announce('Copy failed: select the text and copy it.'); }
  } } }, 'Copy');
  return h('div', { class: 'alert alert-warn', testid: 'secret-once', role: 'status' },
    h('p', {}, h('strong', {}, label), ' This is shown once: copy it now.'), h('p', {}, code, ' ', secret ? copy : null));
}

// confirm asks with a modal <dialog>; it answers {ok, reason}.
export function confirm({ title, message, action = 'Confirm', danger = true, withReason = false }) {
  return new Promise((resolve) => {
    const titleID = uid('dlg');
    const reason = h('input', { type: 'text', name: 'reason', maxlength: '1024', testid: 'confirm-reason', id: uid('f') });
    const ok = h('button', { type: 'submit', value: 'ok', class: danger ? 'btn btn-danger' : 'btn btn-primary', testid: 'confirm-ok' }, action);
    const cancel = h('button', { type: 'submit', value: 'cancel', class: 'btn', testid: 'confirm-cancel', formnovalidate: true }, 'Cancel');
    const form = h('form', { method: 'dialog' },
      h('h2', { id: titleID }, title), h('p', {}, message),
      withReason ? h('div', { class: 'field' }, h('label', { for: reason.id }, 'Reason (optional)'), reason) : null,
      h('div', { class: 'actions' }, cancel, ok));
    const dialog = h('dialog', { testid: 'confirm-dialog', 'aria-labelledby': titleID }, form);
    document.body.append(dialog);
    dialog.addEventListener('close', () => {
      const answer = { ok: dialog.returnValue === 'ok', reason: reason.value.trim() };
      dialog.remove();
      resolve(answer);
    });
    dialog.showModal();
    cancel.focus();
  });
}

// busy disables a button while fn runs.
export async function busy(button, fn) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}
