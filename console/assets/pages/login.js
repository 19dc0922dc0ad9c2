// /ui/login: a token (admin or runtime, bootstrap or managed) is
// exchanged for a session cookie; the token itself is not kept.

import * as api from '../api.js';
import { h, field } from '../dom.js';
import { formError, busy, announce } from '../ui.js';

export default async function login(main, ctx) {
  const next = ctx.query.get('next');
  const token = h('input', { type: 'password', name: 'token', required: true, autocomplete: 'current-password', spellcheck: 'false', testid: 'login-token', class: 'wide' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'login-submit' }, 'Log in');
  const form = h('form', { class: 'panel login', testid: 'login-form', novalidate: true },
    field('API token', token, 'An admin or runtime token. The console keeps a session cookie, never the token.'),
    h('div', { class: 'actions' }, submit));
  const errors = formError(form);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errors.clear();
    if (!token.value.trim()) {
      errors.show(new Error('Enter a token.'));
      token.focus();
      return;
    }
    await busy(submit, async () => {
      try {
        const sess = await api.login(token.value.trim());
        token.value = '';
        ctx.loggedIn(sess);
        announce(`Logged in as ${sess.actor}.`);
        ctx.navigate(next && next.startsWith('/ui/') && !next.startsWith('/ui/login') ? next : '/ui/', { replace: true });
      } catch (err) {
        errors.show(err.status === 401 ? new Error('That token is not valid (unknown, revoked or expired).') : err);
        token.focus();
      }
    });
  });
  main.append(ctx.heading('Log in to promptd'), form);
}
