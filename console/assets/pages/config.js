// config renders a prompt config readably: system text, messages,
// tools, skills, memory, model and variables, each in its own part.

import { h, json, table, dl, section } from '../dom.js';

export function renderConfig(cfg) {
  const parts = [
    section('System', 'config-system', h('pre', { class: 'prompt-text' }, cfg.system || '')),
  ];
  if (cfg.messages && cfg.messages.length) {
    parts.push(section('Messages', 'config-messages', table({
      caption: 'Fixed conversation messages, in order',
      items: cfg.messages,
      columns: [
        { label: 'Role', cell: (m) => m.role },
        { label: 'Content', rowHeader: false, cell: (m) => h('pre', { class: 'prompt-text' }, m.content) },
      ],
    })));
  }
  if (cfg.tools && cfg.tools.length) {
    parts.push(section('Tools', 'config-tools', table({
      caption: 'Tools offered to the model',
      items: cfg.tools,
      columns: [
        { label: 'Name', cell: (t) => h('code', {}, (t.function && t.function.name) || '?') },
        { label: 'Type', cell: (t) => t.type },
        { label: 'Description', cell: (t) => (t.function && t.function.description) || '' },
        { label: 'Parameters', cell: (t) => (t.function && t.function.parameters ? json(t.function.parameters) : '—') },
      ],
    })));
  }
  if (cfg.skills && cfg.skills.length) {
    parts.push(section('Skills', 'config-skills', cfg.skills.map((s) =>
      h('div', { class: 'config-part' }, h('h3', {}, s.name), h('pre', { class: 'prompt-text' }, s.instructions)))));
  }
  if (cfg.memory && cfg.memory.length) {
    parts.push(section('Memory', 'config-memory', h('ul', {}, cfg.memory.map((m) => h('li', {}, m)))));
  }
  if (cfg.model && Object.keys(cfg.model).length) {
    parts.push(section('Model', 'config-model', dl(Object.entries(cfg.model).map(([k, v]) =>
      [k, typeof v === 'object' ? json(v) : String(v)]))));
  }
  const vars = Object.entries(cfg.variables || {});
  if (vars.length) {
    parts.push(section('Variables', 'config-variables', table({
      caption: 'Template variables',
      items: vars.sort(([a], [b]) => a.localeCompare(b)),
      columns: [
        { label: 'Name', cell: ([name]) => h('code', {}, name) },
        { label: 'Required', cell: ([, v]) => (v.required ? 'yes' : 'no') },
        { label: 'Default', cell: ([, v]) => (v.default !== undefined ? h('code', {}, String(v.default)) : h('span', { class: 'muted' }, 'none')) },
      ],
    })));
  }
  const known = new Set(['system', 'messages', 'tools', 'skills', 'memory', 'model', 'variables']);
  const rest = Object.fromEntries(Object.entries(cfg).filter(([k]) => !known.has(k)));
  if (Object.keys(rest).length) parts.push(section('Other settings', 'config-other', json(rest)));
  return parts;
}
