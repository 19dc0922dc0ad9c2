// Shared pieces of the intents pages: an intent's scope in words, and
// "expires in" countdowns on the server's clock.

import { h } from './dom.js';

const list = (names) => names.map((n, i) => [i ? ', ' : '', h('code', {}, n)]);

// scopeView renders a scope (canonical, as the API answers it) as a list
// of sentences: the agents and envs, the whole boards, and per board the
// record ids and id prefixes. Names are shown as code.
export function scopeView(scope) {
  const s = scope || {};
  const items = [];
  const agents = s.agents || [];
  const envs = s.envs || [];
  if (agents.length || envs.length) {
    const who = !agents.length || agents.includes('*') ? 'Every agent' : [agents.length > 1 ? 'Agents ' : 'Agent ', list(agents)];
    items.push([who, envs.length ? [' in ', list(envs)] : ' in every env']);
  }
  for (const b of s.boards || []) items.push(['Board ', h('code', {}, b), ': every record']);
  for (const r of s.records || []) {
    const parts = [];
    if (r.ids && r.ids.length) parts.push([r.ids.length > 1 ? 'records ' : 'record ', list(r.ids)]);
    if (r.prefixes && r.prefixes.length) parts.push(['ids starting ', list(r.prefixes)]);
    items.push(['Board ', h('code', {}, r.board), ': ', parts.map((p, i) => [i ? '; ' : '', p])]);
  }
  if (!items.length) return h('span', { class: 'muted' }, 'nothing');
  return h('ul', { class: 'scope-list', testid: 'intent-scope' }, items.map((item) => h('li', {}, item)));
}

// skew is the server's clock minus the browser's, read from the Date
// header of the last answer; under 2 s (the header's precision) it is 0.
let skew = 0;

// clockFrom reads the server's clock from an answer's headers.
export function clockFrom(headers) {
  const at = Date.parse((headers && headers.get('Date')) || '');
  if (Number.isNaN(at)) return;
  const d = at - Date.now();
  skew = Math.abs(d) < 2000 ? 0 : d;
}

function remaining(ms) {
  if (ms <= 0) return 'expired';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `in ${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `in ${m} min ${s % 60} s`;
  return `in ${Math.floor(m / 60)} h ${m % 60} min`;
}

// countdown is a <time> saying how long until iso ("in 42 s"), exact on
// hover; tick keeps it current.
export function countdown(iso) {
  const el = h('time', { datetime: iso, title: `Expires at ${iso}`, data: { countdown: iso } });
  el.textContent = remaining(Date.parse(iso) - (Date.now() + skew));
  return el;
}

// tick updates the countdowns under root, and answers whether one ran out
// since it was rendered (the intent was renewed, or it expired: time to
// read it again).
export function tick(root) {
  let ranOut = false;
  for (const el of root.querySelectorAll('[data-countdown]')) {
    const left = Date.parse(el.dataset.countdown) - (Date.now() + skew);
    const text = remaining(left);
    if (el.textContent !== text) el.textContent = text;
    if (left <= 0 && !el.dataset.ranOut) {
      el.dataset.ranOut = 'true';
      ranOut = true;
    }
  }
  return ranOut;
}
