// The console's router: /ui/ paths map to page modules; in-app links
// and history moves render the page without a reload. Each page gets a
// fresh container, its live-update subscription and its h1 focused.

import * as api from './api.js';
import { h, replace } from './dom.js';
import { announce, pageError } from './ui.js';
import { watch, indicate } from './live.js';
import login from './pages/login.js';
import agents from './pages/agents.js';
import agent from './pages/agent.js';
import diff from './pages/diff.js';
import draft from './pages/draft.js';
import env from './pages/env.js';
import releases from './pages/releases.js';
import release from './pages/release.js';
import sessions from './pages/sessions.js';
import session from './pages/session.js';
import boards from './pages/boards.js';
import board from './pages/board.js';
import intents from './pages/intents.js';
import intent from './pages/intent.js';
import webhooks from './pages/webhooks.js';
import webhook from './pages/webhook.js';
import tokens from './pages/tokens.js';
import changeRequests from './pages/change-requests.js';
import audit from './pages/audit.js';

// routes: pattern (":name" is one path segment), page, nav item.
const routes = [
  ['/ui/login', login, null],
  ['/ui/', agents, 'agents'],
  ['/ui/agents/:agent', agent, 'agents'],
  ['/ui/agents/:agent/diff', diff, 'agents'],
  ['/ui/agents/:agent/drafts/:id', draft, 'agents'],
  ['/ui/agents/:agent/envs/:env', env, 'agents'],
  ['/ui/releases', releases, 'releases'],
  ['/ui/releases/:id', release, 'releases'],
  ['/ui/sessions', sessions, 'sessions'],
  ['/ui/sessions/:id', session, 'sessions'],
  ['/ui/boards', boards, 'boards'],
  ['/ui/boards/:board', board, 'boards'],
  ['/ui/intents', intents, 'intents'],
  ['/ui/intents/:id', intent, 'intents'],
  ['/ui/webhooks', webhooks, 'webhooks'],
  ['/ui/webhooks/:id', webhook, 'webhooks'],
  ['/ui/tokens', tokens, 'tokens'],
  ['/ui/change-requests', changeRequests, 'change-requests'],
  ['/ui/audit', audit, 'audit'],
];

function match(pathname) {
  const parts = pathname.replace(/\/+$/, '').split('/');
  for (const [pattern, page, nav] of routes) {
    const want = pattern.replace(/\/+$/, '').split('/');
    if (want.length !== parts.length) continue;
    const params = {};
    const ok = want.every((seg, i) => {
      if (seg.startsWith(':')) {
        try { params[seg.slice(1)] = decodeURIComponent(parts[i]); } catch { return false; }
        return parts[i] !== '';
      }
      return seg === parts[i];
    });
    if (ok) return { page, params, nav };
  }
  return null;
}

let current = { stop: () => {}, session: null };

function setNav(active, sess) {
  const nav = document.getElementById('nav');
  const user = document.getElementById('user');
  nav.hidden = !sess;
  user.hidden = !sess;
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.nav === active) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
    // Admin-only pages for runtime tokens, and pages of routes that need an
    // unscoped token for scoped ones, are left out (the API would refuse them).
    a.parentElement.hidden = (Boolean(a.dataset.admin) && (!sess || sess.role !== 'admin'))
      || (Boolean(a.dataset.unscoped) && Boolean(sess && sess.scopes));
  }
  if (sess) {
    const actor = document.querySelector('[data-testid=session-actor]');
    actor.textContent = `${sess.actor} (${sess.role})`;
    actor.dataset.role = sess.role;
  }
}

// navigate moves to an in-app URL and renders it.
export function navigate(to, { replace: replaceState = false } = {}) {
  if (replaceState) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  render();
}

async function render() {
  current.stop();
  current.stop = () => {};
  const loc = new URL(location.href);
  const found = match(loc.pathname);
  if (!current.session && loc.pathname !== '/ui/login') {
    current.session = await api.session().catch(() => null);
    if (!current.session) {
      navigate(`/ui/login?next=${encodeURIComponent(loc.pathname + loc.search)}`, { replace: true });
      return;
    }
  }
  setNav(found && found.nav, current.session);
  const main = document.getElementById('main');
  const container = h('div', { class: 'page' });
  replace(main, container);
  const ctx = {
    params: found ? found.params : {},
    query: loc.searchParams,
    session: current.session,
    navigate,
    // heading renders the page's one h1 and names the document.
    heading(text, ...extra) {
      document.title = `${text} · promptd`;
      return h('h1', { tabindex: '-1', testid: 'page-title' }, text, extra);
    },
    // live refreshes the page on the change feed's events (see live.js).
    live(spec, refresh) {
      if (!container.isConnected) return;
      const stop = watch(spec, refresh);
      const before = current.stop;
      current.stop = () => { before(); stop(); };
    },
    // every runs fn periodically while the page is shown and visible
    // (data the change feed does not describe, such as outcome figures).
    every(ms, fn) {
      if (!container.isConnected) return;
      const timer = setInterval(() => { if (!document.hidden) fn(); }, ms);
      const before = current.stop;
      current.stop = () => { before(); clearInterval(timer); };
    },
    loggedIn(sess) { current.session = sess; },
  };
  indicate('off');
  try {
    if (!found) {
      append404(container, ctx);
    } else {
      await found.page(container, ctx);
    }
  } catch (err) {
    if (err instanceof api.ApiError && err.status === 401) {
      current.session = null;
      navigate(`/ui/login?next=${encodeURIComponent(loc.pathname + loc.search)}`, { replace: true });
      return;
    }
    if (!container.querySelector('h1')) container.prepend(ctx.heading('Error'));
    container.append(pageError(err));
  }
  if (!container.isConnected) return;
  const h1 = container.querySelector('h1');
  if (h1) {
    h1.focus();
    announce(`${h1.textContent} page.`);
  }
}

function append404(container, ctx) {
  container.append(ctx.heading('Page not found'),
    h('p', {}, 'There is no console page at this address. ', h('a', { href: '/ui/' }, 'Go to the agents list'), '.'));
}

// In-app links render without a reload; others (new tab, downloads) are left alone.
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const to = new URL(a.href, location.href);
  if (to.origin !== location.origin || !to.pathname.startsWith('/ui/') || /\.[a-z0-9]+$/i.test(to.pathname)) return;
  if (to.hash && to.pathname === location.pathname && to.search === location.search) return;
  ev.preventDefault();
  navigate(to.pathname + to.search);
});

window.addEventListener('popstate', render);

// A page left for another document stays in the back/forward cache with
// its connections open: six such event streams use up the browser's
// connections to the server and the next page never loads. So the page's
// live updates stop when it is hidden, and it renders afresh if it is
// shown from the cache again.
window.addEventListener('pagehide', () => { current.stop(); current.stop = () => {}; });
window.addEventListener('pageshow', (ev) => { if (ev.persisted) render(); });

// A 401 from /v1 means the session is over: log in again, then come back.
window.addEventListener('promptd:unauthorized', () => {
  if (location.pathname === '/ui/login') return;
  current.session = null;
  navigate(`/ui/login?next=${encodeURIComponent(location.pathname + location.search)}`, { replace: true });
  announce('Your session has ended: log in again.');
});

document.getElementById('logout').addEventListener('click', async () => {
  try {
    await api.logout();
  } catch (err) {
    announce(`Logging out failed: ${err.message}`);
    return;
  }
  current.session = null;
  navigate('/ui/login');
  announce('Logged out.');
});

render();
