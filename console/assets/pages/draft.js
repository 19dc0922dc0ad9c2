// /ui/agents/{agent}/drafts/{id}: the draft editor. Each part of the
// config has its own labelled control; every change is autosaved (PUT
// with the revision read last, debounced) and the save's answer lists
// the config's problems, shown next to the field they name
// (aria-invalid, aria-describedby). A second tab's save is a conflict the
// page says. Before publishing: the diff against the base version and a
// preview (a form built from the declared variables, the assembled
// messages in both formats). Publish, with the three-way merge offered on
// a stale base, then point an env (a protected env answers with a change
// request).

import { ApiError, get, send, request } from '../api.js';
import { h, path, field, replace, section, uid, link, dl, time } from '../dom.js';
import { announce, problemText, gated, busy, pageError } from '../ui.js';
import { renderDiff } from './diff.js';

const TYPES = ['string', 'number', 'boolean', 'enum', 'string_list'];
const SAVE_DELAY = 600; // ms of quiet before an autosave

export default async function draft(main, ctx) {
  const name = ctx.params.agent;
  const id = ctx.params.id;
  const api = path('/v1/agents', name, 'drafts', id);
  let d = await get(api);
  let revision = d.revision;
  let conflicted = false;

  main.append(ctx.heading(`Draft of ${name}`),
    h('p', {}, link(path('/ui/agents', name) + `?version=${d.base_version}`, `Back to ${name}`)));

  const saveState = h('span', { testid: 'draft-save-state', data: { state: 'saved' }, role: 'status' }, 'Saved');
  const revText = h('span', { testid: 'draft-revision' }, String(revision));
  main.append(dl([['Base version', `v${d.base_version}`], ['Revision', revText], ['Last saved', time(d.updated_at)], ['State', saveState]],
    { testid: 'draft-facts' }));
  const conflictBox = h('div', { testid: 'draft-conflict', class: 'alert alert-error', role: 'alert', hidden: true });
  main.append(conflictBox);

  // The problems of each top-level member, next to its control.
  const problemBoxes = {};
  const controls = {};
  const problemBox = (key) => {
    const el = h('ul', { class: 'problems', id: uid('prob'), testid: `problems-${key}`, hidden: true });
    problemBoxes[key] = el;
    return el;
  };
  const describe = (control, key, hintID) => {
    controls[key] = { control, hintID };
    control.setAttribute('aria-describedby', [hintID, problemBoxes[key].id].filter(Boolean).join(' '));
  };

  // system
  const system = h('textarea', { name: 'system', rows: '8', testid: 'draft-system', spellcheck: 'true' });
  system.value = d.config.system || '';
  const systemField = field('System prompt', system, 'Placeholders are {{name}}; declare each under Variables.');
  systemField.append(problemBox('system'));
  describe(system, 'system', systemField.querySelector('.hint').id);

  // skills: rows of name + instructions
  const skills = rowList({
    key: 'skills', legend: 'Skills', addLabel: 'Add a skill', items: d.config.skills || [],
    row: (s = {}) => {
      const n = h('input', { type: 'text', name: 'skill-name', value: s.name || '', testid: 'skill-name' });
      const ins = h('textarea', { name: 'skill-instructions', rows: '3', testid: 'skill-instructions' });
      ins.value = s.instructions || '';
      return { fields: [field('Name', n), field('Instructions', ins)], value: () => ({ name: n.value, instructions: ins.value }) };
    },
  });
  skills.el.append(problemBox('skills'));

  // memory: one item per line
  const memory = h('textarea', { name: 'memory', rows: '4', testid: 'draft-memory' });
  memory.value = (d.config.memory || []).join('\n');
  const memoryField = field('Memory', memory, 'One item per line.');
  memoryField.append(problemBox('memory'));
  describe(memory, 'memory', memoryField.querySelector('.hint').id);

  // messages: rows of role + content
  const messages = rowList({
    key: 'messages', legend: 'Messages', addLabel: 'Add a message', items: (d.config.messages || []).filter((m) => !m.fragment),
    row: (m = {}) => {
      const role = h('select', { name: 'message-role', testid: 'message-role' },
        ['user', 'assistant', 'system'].map((r) => h('option', { value: r, selected: (m.role || 'user') === r }, r)));
      const content = h('textarea', { name: 'message-content', rows: '2', testid: 'message-content' });
      content.value = m.content || '';
      return { fields: [field('Role', role), field('Content', content)], value: () => ({ role: role.value, content: content.value }) };
    },
  });
  messages.el.append(problemBox('messages'));

  // variables: rows of name, type, values, required, default, description
  const variables = rowList({
    key: 'variables', legend: 'Variables', addLabel: 'Add a variable',
    items: Object.entries(d.config.variables || {}).map(([n, v]) => ({ name: n, ...v })),
    row: (v = {}) => {
      const n = h('input', { type: 'text', name: 'var-name', value: v.name || '', testid: 'var-name', autocomplete: 'off' });
      const type = h('select', { name: 'var-type', testid: 'var-type' },
        TYPES.map((t) => h('option', { value: t, selected: (v.type || 'string') === t }, t)));
      const values = h('input', { type: 'text', name: 'var-values', value: (v.values || []).join(', '), testid: 'var-values' });
      const required = h('input', { type: 'checkbox', name: 'var-required', checked: Boolean(v.required), testid: 'var-required', id: uid('f') });
      const def = h('input', { type: 'text', name: 'var-default', testid: 'var-default',
        value: v.default === undefined ? '' : (typeof v.default === 'string' ? v.default : JSON.stringify(v.default)) });
      const desc = h('input', { type: 'text', name: 'var-description', value: v.description || '', testid: 'var-description' });
      return {
        fields: [field('Name', n), field('Type', type), field('Values (enum, comma-separated)', values),
          h('div', { class: 'check' }, required, h('label', { for: required.id }, 'Required')),
          field('Default', def), field('Description', desc)],
        value: () => {
          const out = {};
          if (type.value !== 'string') out.type = type.value;
          if (type.value === 'enum') out.values = values.value.split(',').map((s) => s.trim()).filter(Boolean);
          if (required.checked) out.required = true;
          if (def.value !== '') out.default = typedDefault(type.value, def.value);
          if (desc.value) out.description = desc.value;
          return [n.value.trim(), out];
        },
      };
    },
  });
  variables.el.append(problemBox('variables'));

  // tools and model: JSON text areas
  const tools = h('textarea', { name: 'tools', rows: '6', testid: 'draft-tools', class: 'mono', spellcheck: 'false' });
  tools.value = d.config.tools ? JSON.stringify(d.config.tools, null, 2) : '';
  const toolsField = field('Tools (JSON array)', tools, 'OpenAI tool objects; leave empty for none.');
  toolsField.append(problemBox('tools'));
  describe(tools, 'tools', toolsField.querySelector('.hint').id);
  const model = h('textarea', { name: 'model', rows: '4', testid: 'draft-model', class: 'mono', spellcheck: 'false' });
  model.value = d.config.model ? JSON.stringify(d.config.model, null, 2) : '';
  const modelField = field('Model (JSON object)', model, 'For example {"name": "gpt-4o", "temperature": 0.2}.');
  modelField.append(problemBox('model'));
  describe(model, 'model', modelField.querySelector('.hint').id);

  const others = h('ul', { class: 'problems', testid: 'problems-config', hidden: true, id: uid('prob') });
  problemBoxes.config = others;
  const summary = h('p', { testid: 'draft-problem-count', 'aria-live': 'polite' });
  const form = h('form', { class: 'panel', testid: 'draft-form', novalidate: true, 'aria-describedby': others.id },
    systemField, skills.el, memoryField, messages.el, variables.el, toolsField, modelField, others, summary);
  form.addEventListener('submit', (ev) => ev.preventDefault());
  // Members the form has no control for (fragments) are kept as they are.
  const kept = Object.fromEntries(Object.entries(d.config).filter(([k]) => !['system', 'skills', 'memory', 'messages', 'variables', 'tools', 'model'].includes(k)));
  const fragmentMessages = (d.config.messages || []).filter((m) => m.fragment);

  // config builds the draft's config from the form; local problems are
  // text areas that are not JSON.
  function config() {
    const local = [];
    const cfg = { ...kept, system: system.value };
    const sk = skills.values();
    if (sk.length) cfg.skills = sk;
    const mem = memory.value.split('\n').map((s) => s.trim()).filter(Boolean);
    if (mem.length) cfg.memory = mem;
    const msgs = [...messages.values(), ...fragmentMessages];
    if (msgs.length) cfg.messages = msgs;
    const vars = variables.values().filter(([n]) => n);
    if (vars.length) cfg.variables = Object.fromEntries(vars);
    for (const [key, el, want] of [['tools', tools, 'array'], ['model', model, 'object']]) {
      if (!el.value.trim()) continue;
      try {
        const v = JSON.parse(el.value);
        if (want === 'array' ? !Array.isArray(v) : (typeof v !== 'object' || v === null || Array.isArray(v))) throw new Error(`must be a JSON ${want}`);
        cfg[key] = v;
      } catch (err) {
        local.push({ code: 'invalid_json', field: `config.${key}`, detail: `${key} is not valid: ${err.message}` });
      }
    }
    return { cfg, local };
  }

  // showProblems puts each problem next to its member's control.
  let problems = [];
  function showProblems(list) {
    problems = list;
    for (const el of Object.values(problemBoxes)) { el.replaceChildren(); el.hidden = true; }
    for (const { control } of Object.values(controls)) control.removeAttribute('aria-invalid');
    for (const el of [skills, messages, variables]) el.el.removeAttribute('aria-invalid');
    for (const p of list) {
      const key = String(p.field || 'config').replace(/^config\.?/, '').split(/[.[]/)[0] || 'config';
      const box = problemBoxes[key] || problemBoxes.config;
      box.append(h('li', { testid: 'draft-problem', data: { code: p.code, field: p.field, variable: p.variable } },
        h('code', {}, p.code), ` at ${p.field}: ${p.detail}`));
      box.hidden = false;
      if (controls[key]) controls[key].control.setAttribute('aria-invalid', 'true');
    }
    summary.textContent = list.length ? `${list.length} problem${list.length === 1 ? '' : 's'} to fix before publishing.` : 'No problems: this draft can be published.';
    summary.dataset.count = String(list.length);
    publishButton.disabled = list.length > 0;
  }

  function setState(state, text) {
    saveState.dataset.state = state;
    saveState.textContent = text;
  }

  // save is the autosave: one PUT at a time, the latest form each time.
  let timer = null;
  let saving = null;
  let dirty = false;
  async function save() {
    clearTimeout(timer);
    timer = null;
    if (conflicted) return;
    if (saving) { dirty = true; await saving; return save(); }
    const { cfg, local } = config();
    dirty = false;
    setState('saving', 'Saving…');
    saving = (async () => {
      try {
        const res = await send('PUT', api, { config: cfg, expected_revision: revision });
        revision = res.data.revision;
        revText.textContent = String(revision);
        showProblems([...local, ...(res.data.problems || [])]);
        if (timer) setState('editing', 'Editing…'); // typed while saving: another save follows
        else setState('saved', 'Saved');
      } catch (err) {
        if (err instanceof ApiError && err.code === 'revision_conflict') {
          conflicted = true;
          setState('conflict', 'Not saved: conflict');
          const reload = h('button', { type: 'button', class: 'btn', testid: 'draft-reload', on: { click: () => ctx.navigate(location.pathname + location.search, { replace: true }) } }, 'Reload the saved draft');
          replace(conflictBox, h('p', {}, `This draft was saved elsewhere (another tab or window) at revision ${err.fields.current_revision}; your latest changes were not saved. Reload to continue from the saved draft.`), reload);
          conflictBox.hidden = false;
          announce('Conflict: this draft was saved elsewhere.');
        } else {
          setState('error', `Not saved: ${problemText(err)}`);
        }
      } finally {
        saving = null;
      }
    })();
    await saving;
    if (dirty) await save();
  }
  form.addEventListener('input', () => {
    setState('editing', 'Editing…');
    clearTimeout(timer);
    timer = setTimeout(() => { timer = null; save(); }, SAVE_DELAY);
    refreshVariables();
  });
  form.addEventListener('change', () => refreshVariables());
  async function flush() {
    if (timer || saving || saveState.dataset.state === 'editing') await save();
  }

  // The diff against the base version.
  const diffView = h('div', { testid: 'draft-diff' });
  const diffButton = h('button', { type: 'button', class: 'btn', testid: 'draft-diff-show' }, 'Show changes against the base');
  diffButton.addEventListener('click', () => busy(diffButton, async () => {
    await flush();
    try {
      const text = await get(`${api}/diff`, {}, 'text/x-diff, text/plain');
      replace(diffView, renderDiff(text, String(d.base_version), 'draft'));
      announce('Changes against the base shown.');
    } catch (err) {
      replace(diffView, pageError(err));
    }
  }));

  // The preview: a form built from the declared variables.
  const varForm = h('div', { testid: 'preview-vars' });
  const previewOut = h('div', { testid: 'preview-output', 'aria-live': 'polite' });
  const previewButton = h('button', { type: 'button', class: 'btn btn-primary', testid: 'preview-run' }, 'Preview');
  let varInputs = [];
  let declared = '';
  function refreshVariables() {
    const vars = variables.values().filter(([n]) => n);
    const key = JSON.stringify(vars);
    if (key === declared) return;
    declared = key;
    const before = Object.fromEntries(varInputs.map((v) => [v.name, v.read()]));
    varInputs = vars.map(([n, v]) => sampleInput(n, v, before[n]));
    replace(varForm, varInputs.length ? varInputs.map((v) => v.el) : h('p', { class: 'empty' }, 'No variables declared.'));
  }
  refreshVariables();
  previewButton.addEventListener('click', () => busy(previewButton, async () => {
    const { cfg, local } = config();
    if (local.length) { replace(previewOut, pageError(new Error(local[0].detail))); return; }
    const values = {};
    for (const v of varInputs) {
      const value = v.read();
      if (value !== undefined) values[v.name] = value;
    }
    const body = { config: cfg, variables: values };
    try {
      const [plain, openai] = await Promise.all([
        request('POST', path('/v1/agents', name, 'preview'), { body: { ...body, format: 'plain' } }),
        request('POST', path('/v1/agents', name, 'preview'), { body: { ...body, format: 'openai' } }).catch((err) => ({ error: err })),
      ]);
      replace(previewOut,
        section('Assembled messages (plain)', 'preview-plain',
          h('ol', { class: 'messages' }, plain.data.messages.map((m) => {
            const text = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
            return h('li', { testid: 'preview-message', data: { role: m.role } },
              h('strong', {}, m.role), ' ', tokenEstimate(text), h('pre', { class: 'prompt-text' }, text));
          }))),
        section('OpenAI request body', 'preview-openai',
          openai.error ? h('p', { class: 'muted', testid: 'preview-openai-error' }, problemText(openai.error))
            : h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(openai.data, null, 2))));
      announce(`Preview: ${plain.data.messages.length} messages.`);
    } catch (err) {
      const box = pageError(err);
      box.dataset.testid = 'preview-error';
      replace(previewOut, box);
    }
  }));

  // Publish, then point an env.
  const message = h('input', { type: 'text', name: 'message', maxlength: '4096', testid: 'publish-message' });
  const publishButton = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'publish-submit' }, 'Publish');
  const publishOut = h('div', { testid: 'publish-result', 'aria-live': 'polite' });
  const publishForm = h('form', { class: 'panel', testid: 'publish-form' },
    field('Message', message, 'What changed, for the version history.'), h('div', { class: 'actions' }, publishButton), publishOut);
  async function publish(merge) {
    await flush();
    if (conflicted) return;
    try {
      const res = await send('POST', `${api}/publish`, { message: message.value, ...(merge ? { merge: true } : {}) });
      published(res.data);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'version_conflict') {
        const mergeButton = h('button', { type: 'button', class: 'btn btn-primary', testid: 'publish-merge' }, 'Merge with the latest version and publish');
        mergeButton.addEventListener('click', () => busy(mergeButton, () => publish(true)));
        replace(publishOut, h('div', { class: 'alert alert-error', role: 'alert', testid: 'publish-conflict', data: { latest: err.fields.latest_version } },
          h('p', {}, `This draft starts from v${d.base_version}, but v${err.fields.latest_version} was published since. `,
            link(`${path('/ui/agents', name, 'diff')}?a=${d.base_version}&b=${err.fields.latest_version}`, 'See what changed'),
            '. The server can merge the two three-way (your changes and theirs, by JSON path) when they touch different parts.'),
          mergeButton));
        announce('Conflict: a newer version was published.');
      } else if (err instanceof ApiError && err.code === 'merge_conflict') {
        replace(publishOut, h('div', { class: 'alert alert-error', role: 'alert', testid: 'merge-conflict' },
          h('p', {}, `Both sides changed the same parts: ${(err.fields.paths || []).join(', ') || err.detail}. Edit this draft from the latest version instead.`)));
        announce('Merge conflict.');
      } else {
        replace(publishOut, pageError(err));
      }
    }
  }
  publishForm.addEventListener('submit', (ev) => { ev.preventDefault(); busy(publishButton, () => publish(false)); });

  function published(v) {
    announce(`Version ${v.version} published.`);
    const env = h('input', { type: 'text', name: 'env', value: 'staging', testid: 'point-env', required: true });
    const pointButton = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'point-submit' }, `Point the env at v${v.version}`);
    const pointOut = h('div', { testid: 'point-result', 'aria-live': 'polite' });
    const pointForm = h('form', { class: 'row', testid: 'point-form' }, field('Env', env), pointButton);
    pointForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      busy(pointButton, async () => {
        try {
          const envPath = path('/v1/agents', name, 'envs', env.value.trim());
          let expected = 0;
          try { expected = (await get(envPath)).revision; } catch (err) { if (!(err instanceof ApiError && (err.code === 'no_pointer' || err.code === 'not_found'))) throw err; } // no pointer yet: create it
          const res = await send('PUT', envPath, { version: v.version, expected_revision: expected });
          const notice = gated(res);
          replace(pointOut, notice || h('p', { class: 'alert alert-info', testid: 'point-done', data: { env: env.value.trim(), version: v.version } },
            `${env.value.trim()} now serves v${v.version}. `, link(path('/ui/agents', name, 'envs', env.value.trim()), 'Open the env')));
          if (!notice) announce(`${env.value.trim()} now serves version ${v.version}.`);
        } catch (err) {
          replace(pointOut, pageError(err));
        }
      });
    });
    replace(main, ctx.heading(`Draft of ${name} published`),
      h('div', { class: 'alert alert-info', role: 'status', testid: 'published', data: { version: v.version } },
        h('p', {}, `Published as `, link(`${path('/ui/agents', name)}?version=${v.version}`, `v${v.version}`, { testid: 'published-link' }),
          v.merge ? ` (merged over v${v.merge.theirs_version})` : '', '. The draft is gone.')),
      section('Point an env', 'point', pointForm, pointOut));
    main.querySelector('h1').focus();
  }

  main.append(h('div', { class: 'cols' },
    h('div', {}, section('Config', 'draft-editor', form)),
    h('div', {},
      section('Changes', 'draft-changes', diffButton, diffView),
      section('Preview', 'preview', h('p', { class: 'hint' }, 'Sample values for the declared variables; nothing is written.'), varForm, previewButton, previewOut),
      section('Publish', 'publish', publishForm))));

  // First validation of what was loaded.
  try {
    const v = await send('POST', `${api}/validate`);
    showProblems([...config().local, ...v.data.problems]);
  } catch (err) {
    showProblems([]);
  }
}

// tokenizer loads the vendored o200k tokenizer once, on the first preview
// (gpt-tokenizer, served by promptd: console/assets/vendor/).
let tokenizer = null;
function loadTokenizer() {
  if (!tokenizer) tokenizer = import('../vendor/gpt-tokenizer/esm/encoding/o200k_base.js').catch(() => null);
  return tokenizer;
}

// tokenEstimate is a message's token count, filled in once the tokenizer
// has loaded; it is labelled an estimate (the model's own count adds the
// chat format's few tokens per message).
function tokenEstimate(text) {
  const el = h('span', { class: 'muted tokens', testid: 'preview-tokens' }, '(counting tokens…)');
  loadTokenizer().then((tok) => {
    if (!tok) { el.textContent = '(token estimate unavailable)'; return; }
    const n = tok.countTokens(text);
    el.dataset.tokens = String(n);
    el.textContent = `${n} token${n === 1 ? '' : 's'}, estimate (o200k)`;
  });
  return el;
}

// rowList is a fieldset of repeated rows with add and remove buttons.
function rowList({ key, legend, addLabel, items, row }) {
  const rows = [];
  const list = h('div', { class: 'rows' });
  const el = h('fieldset', { testid: `draft-${key}` }, h('legend', {}, legend), list);
  const add = (item) => {
    const r = row(item);
    const remove = h('button', { type: 'button', class: 'btn', testid: `${key}-remove` }, 'Remove');
    const rowEl = h('div', { class: 'row item-row', testid: `${key}-row` }, r.fields, remove);
    remove.setAttribute('aria-label', `Remove this ${key.replace(/s$/, '')}`);
    remove.addEventListener('click', () => {
      rows.splice(rows.indexOf(r), 1);
      rowEl.remove();
      el.dispatchEvent(new Event('input', { bubbles: true }));
      addButton.focus();
    });
    rows.push(r);
    list.append(rowEl);
    return rowEl;
  };
  const addButton = h('button', { type: 'button', class: 'btn', testid: `${key}-add` }, addLabel);
  addButton.addEventListener('click', () => {
    const rowEl = add();
    const first = rowEl.querySelector('input, textarea, select');
    if (first) first.focus();
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  items.forEach((item) => add(item));
  el.append(addButton);
  return { el, values: () => rows.map((r) => r.value()) };
}

// typedDefault reads a default typed as text into its variable's type.
function typedDefault(type, text) {
  if (type === 'number') { const n = Number(text); return Number.isFinite(n) ? n : text; }
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  if (type === 'string_list') { try { const v = JSON.parse(text); if (Array.isArray(v)) return v; } catch { /* a list as text */ } return text.split(',').map((s) => s.trim()).filter(Boolean); }
  return text;
}

// sampleInput is the preview's control for one declared variable, of its
// type; read() answers its value as assemble takes it (undefined: left out).
function sampleInput(name, v, previous) {
  const type = v.type || 'string';
  const label = `${name}${v.required ? ' (required)' : ''}`;
  const hint = [type, v.description].filter(Boolean).join(' — ');
  let control;
  let read;
  if (type === 'boolean') {
    control = h('select', { name, testid: 'preview-var', data: { var: name } },
      h('option', { value: '' }, '(default)'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
    read = () => (control.value === '' ? undefined : control.value === 'true');
  } else if (type === 'enum') {
    control = h('select', { name, testid: 'preview-var', data: { var: name } },
      h('option', { value: '' }, '(default)'), (v.values || []).map((x) => h('option', { value: x }, x)));
    read = () => (control.value === '' ? undefined : control.value);
  } else {
    control = h('input', { type: type === 'number' ? 'number' : 'text', step: type === 'number' ? 'any' : null, name, testid: 'preview-var', data: { var: name },
      placeholder: v.default !== undefined ? String(v.default) : '' });
    read = () => {
      if (control.value === '') return undefined;
      if (type === 'number') return Number(control.value);
      if (type === 'string_list') return control.value.split(',').map((s) => s.trim()).filter(Boolean);
      return control.value;
    };
  }
  if (previous !== undefined) control.value = Array.isArray(previous) ? previous.join(', ') : String(previous);
  return { name, el: field(label, control, hint), read };
}
