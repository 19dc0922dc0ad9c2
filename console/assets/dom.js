// DOM helpers. Every value from the API enters the page as text
// (textContent, attributes), never as markup.

let nextID = 0;

// uid returns an id unique in the page, for label/aria links.
export function uid(prefix = 'el') {
  nextID += 1;
  return `${prefix}-${nextID}`;
}

const properties = new Set(['hidden', 'disabled', 'checked', 'required', 'selected', 'value', 'readOnly', 'open']);

// h builds an element: h('a', {href, class, testid, data: {agent}, on: {click}}, ...children).
// Children are nodes or strings (text); null, undefined and false are skipped.
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'testid') el.dataset.testid = value;
    else if (key === 'data') Object.entries(value).forEach(([k, v]) => { if (v !== undefined && v !== null) el.dataset[k] = String(v); });
    else if (key === 'on') Object.entries(value).forEach(([ev, fn]) => el.addEventListener(ev, fn));
    else if (properties.has(key)) el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

// append adds children (nodes, strings, arrays of them) to el.
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// replace swaps el's children for the given ones.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// link is an in-app link; the router handles clicks on it.
export function link(href, text, props = {}) {
  return h('a', { href, ...props }, text);
}

// path joins encoded path segments: path('/ui/agents', name) -> /ui/agents/<name>.
export function path(base, ...segments) {
  return [base, ...segments.map((s) => encodeURIComponent(String(s)))].join('/');
}

// time renders an RFC 3339 instant as a <time>, readable and exact on hover.
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  const text = Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  return h('time', { datetime: iso, title: iso }, text);
}

// json renders any JSON value readably.
export function json(value, props = {}) {
  return h('pre', { class: 'json', ...props }, JSON.stringify(value, null, 2));
}

// table renders items with columns [{label, cell: item => node|string, class}].
// Headers carry scope; rowProps(item) gives each row's attributes.
export function table({ caption, columns, items, rowProps = () => ({}), empty = 'Nothing here yet.', testid }) {
  if (!items.length) return h('p', { class: 'empty', testid: testid && `${testid}-empty` }, empty);
  const head = h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label)));
  const rows = items.map((item) => h('tr', rowProps(item), columns.map((c, i) => {
    const content = c.cell(item);
    return i === 0 && c.rowHeader !== false ? h('th', { scope: 'row', class: c.class }, content) : h('td', { class: c.class }, content);
  })));
  return h('div', { class: 'table-wrap' },
    h('table', {}, caption && h('caption', {}, caption), h('thead', {}, head), h('tbody', {}, rows)));
}

// dl renders [term, description] pairs as a description list.
export function dl(pairs, props = {}) {
  return h('dl', { class: 'facts', ...props }, pairs.filter(Boolean).map(([term, desc]) => [h('dt', {}, term), h('dd', {}, desc)]));
}

// field labels a control: field('Version', input, 'hint').
export function field(label, control, hint) {
  control.id = control.id || uid('f');
  let hintEl = null;
  if (hint) {
    hintEl = h('span', { class: 'hint', id: uid('hint') }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

// section is a titled region: h2 plus content, labelled by its heading.
export function section(title, testid, ...content) {
  const id = uid('sec');
  return h('section', { 'aria-labelledby': id, testid }, h('h2', { id }, title), content);
}

// badge renders a state as text in a coloured pill (the text carries the meaning).
export function badge(text, kind = text) {
  return h('span', { class: `badge badge-${kind}` }, text);
}

// splitList turns "a, b ,c" into ['a', 'b', 'c'].
export function splitList(text) {
  return text.split(',').map((s) => s.trim()).filter(Boolean);
}
