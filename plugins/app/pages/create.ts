/**
 * Create a node from the app (issue 25 item 1): `GET /app/new` chooses a type from the
 * registry (the schema operation), then shows a form built from that type's fields (required
 * ones marked, choices as selects), with title, summary, body, a project picker, an optional
 * assignee and an optional edge. Pickers take a title or an id and work without script;
 * static/pickers.js fills their `<datalist>` as the person types, from `GET /app/lookup`.
 * Posting calls put_node (if_exists error); a refusal comes back next to its field in words
 * a person can act on, with everything typed kept.
 */
import { isSvcError, SvcError } from '../../../kernel/errors.js';
import type { FieldRule, NodeTypeDef } from '../../../kernel/registry.js';
import { csrfField, html, layout, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';

/** Types a person does not create from this form: identities (admin routes), and records other features write. */
const NOT_CREATED_HERE = new Set(['person', 'agent', 'comment', 'run', 'capture', 'correction', 'finding']);
/** The edge types people link work with, in the order offered; the others are written by features (assigned, reviews, comments, identity). */
export const PERSON_EDGE_TYPES = ['blocks', 'relates-to', 'part-of', 'resolves', 'supersedes', 'concerns', 'answers'];
const SLUG = /^[a-z0-9][a-z0-9-]*$/;
export const SLUG_WORDS = 'use lowercase letters, digits and dashes, starting with a letter or digit';
const PRIORITIES = ['p1', 'p2', 'p3'];
const SUMMARY_MAX = 500;
const TITLE_MAX = 200;

/** The edge types a person picks from: the list above, then any the tenant's graph schemas added (never the features' own). */
export function personEdgeTypes(s: Signed): string[] {
  const registry = s.bridge.tenant.registry;
  const extra = [...registry.edgeTypes.values()]
    .filter((e) => e.source === 'graph' && !PERSON_EDGE_TYPES.includes(e.type))
    .map((e) => e.type);
  return [...PERSON_EDGE_TYPES.filter((t) => registry.edgeTypes.has(t)), ...extra.sort()];
}

/** The form as typed: every value kept so a refused post shows it again. */
type Draft = Record<string, string>;
type FieldErrors = Record<string, string>;

interface TypeChoice {
  type: string;
  description: string;
  prefix: string;
}

/** The types the chooser offers, from the schema operation's answer (GET /v1/schema). */
async function typeChoices(s: Signed): Promise<TypeChoice[]> {
  const answer = await s.bridge.schema();
  return answer.node_types
    .map((t) => ({
      type: String(t.type),
      description: String(t.description ?? ''),
      prefix: String(t.prefix ?? `${String(t.type)}-`),
      identity: t.identity === true,
    }))
    .filter((t) => !t.identity && !NOT_CREATED_HERE.has(t.type))
    .map(({ type, description, prefix }) => ({ type, description, prefix }));
}

export const slugify = (text: string): string =>
  text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');

/** Words for a field rule's kind: what to type. */
function kindHint(rule: FieldRule): string {
  switch (rule.kind) {
    case 'string':
      return '';
    case 'slug-list':
      return `several values separated by commas; each: ${SLUG_WORDS}`;
    case 'string-list':
      return 'several values separated by commas';
    case 'type-list':
      return 'choose one or more types';
    default:
      return 'JSON, for example {"key": "value"}';
  }
}

export function label(field: string): string {
  const words = field.replace(/[_-]+/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A resolved picker value: the node id a title or id names, or the words saying why not. */
type Pick = { id: string } | { error: string };

/** A title or id typed into a picker, resolved among `candidates` (ids); an exact id wins, then a unique title (any case). */
export function resolvePick(s: Signed, text: string, candidates: Iterable<string>, what: string): Pick {
  const index = s.bridge.tenant.index;
  const wanted = text.trim();
  const ids = [...candidates];
  if (ids.includes(wanted)) return { id: wanted };
  const lower = wanted.toLowerCase();
  const byTitle = ids.filter((id) => {
    const r = index.get(id);
    return (r?.title ?? '').toLowerCase() === lower || String(r?.frontmatter.name ?? '').toLowerCase() === lower;
  });
  if (byTitle.length === 1) return { id: byTitle[0]! };
  if (byTitle.length > 1)
    return { error: `several ${what}s are called “${wanted}”: type the id of the one you mean (${byTitle.slice(0, 5).join(', ')})` };
  return { error: `no ${what} is called “${wanted}”: pick one from the suggestions, or type its id` };
}

/** Every node id a person may link to (the traversable, non-internal types). */
export function linkableIds(s: Signed): string[] {
  const registry = s.bridge.tenant.registry;
  const out: string[] = [];
  for (const t of registry.nodeTypes.values()) {
    if (!t.traversable || NOT_CREATED_HERE.has(t.type)) continue;
    for (const id of s.bridge.tenant.index.idsOfType(t.type)) out.push(id);
  }
  return out;
}

/** Project choices: the proj and repo nodes, and any project value already in use. */
export function projectIds(s: Signed): string[] {
  const index = s.bridge.tenant.index;
  return [...new Set([...index.idsOfType('proj'), ...index.idsOfType('repo'), ...index.projects()])];
}

/**
 * GET /app/lookup?kind=node|project|person&q=: the pickers' suggestions as JSON, best first:
 * titles (or names) containing the words, then, for nodes, the app's search (query_graph's
 * digest ranking) over summaries and bodies. At most 10.
 */
export async function lookup(req: AppRequest, s: Signed): Promise<AppResult> {
  const kind = req.query.get('kind') ?? 'node';
  const q = (req.query.get('q') ?? '').trim().toLowerCase().slice(0, 200);
  const index = s.bridge.tenant.index;
  const pool =
    kind === 'person' ? s.bridge.people().map((p) => p.id) : kind === 'project' ? projectIds(s) : kind === 'node' ? linkableIds(s) : null;
  if (!pool)
    return {
      status: 422,
      type: 'application/json',
      body: JSON.stringify({ error: { code: 'validation_failed', message: 'kind is node, project or person', details: {} } }),
    };
  const titleOf = (id: string) => {
    const r = index.get(id);
    return String((r?.type === 'person' ? r.frontmatter.name : undefined) ?? r?.title ?? id);
  };
  const hits = pool
    .filter((id) => !q || titleOf(id).toLowerCase().includes(q) || id.includes(q))
    .sort(
      (a, b) =>
        Number(!titleOf(a).toLowerCase().startsWith(q)) - Number(!titleOf(b).toLowerCase().startsWith(q)) ||
        titleOf(a).localeCompare(titleOf(b)),
    )
    .slice(0, 10);
  if (kind === 'node' && hits.length < 10 && q.length >= 3 && s.bridge.has('capture')) {
    const allowed = new Set(pool);
    const found = await s.bridge.queryGraph(q);
    for (const id of found.node_ids) if (hits.length < 10 && allowed.has(id) && !hits.includes(id)) hits.push(id);
  }
  const results = hits.map((id) => ({ id, title: titleOf(id), type: index.get(id)?.type ?? '' }));
  return { type: 'application/json', body: JSON.stringify({ results }), cache: 'private, no-store' };
}

function option(value: string, text: string, selected: string): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${text}</option>`;
}

/** A field's error, tied to its input by id (aria-describedby) and read out as the form comes back. */
function fieldError(name: string, errs: FieldErrors): Html | string {
  return errs[name] ? html`<p class="field-error" id="err-${name}">${errs[name]}</p>` : '';
}
const describedBy = (name: string, errs: FieldErrors, hint = false): Html =>
  html`${errs[name] ? html` aria-invalid="true"` : ''}${errs[name] || hint ? html` aria-describedby="${[errs[name] ? `err-${name}` : '', hint ? `hint-${name}` : ''].filter(Boolean).join(' ')}"` : ''}`;

function chooserPage(s: Signed, types: TypeChoice[]): AppResult {
  const body = html`<h1>New node</h1>
<p>What are you creating?</p>
<ul class="type-choices">${types.map(
    (t) =>
      html`<li><a href="/app/new?type=${encodeURIComponent(t.type)}"><strong>${label(t.type)}</strong></a> <span class="muted small"><code>${t.prefix}</code></span><p class="small">${t.description}</p></li>`,
  )}</ul>`;
  return { html: layout({ title: 'New node', viewer: s.viewer, nav: 'new', flash: s.flash }, body) };
}

export function customField(rule: FieldRule, draft: Draft, errs: FieldErrors, types: string[]): Html {
  const name = `f_${rule.field}`;
  const hint = kindHint(rule);
  const req = rule.required ? html` <span class="req">(required)</span>` : '';
  const hintEl = hint ? html`<p class="hint small" id="hint-${name}">${hint}</p>` : '';
  if (rule.kind === 'type-list') {
    const chosen = new Set((draft[name] ?? '').split(',').filter(Boolean));
    return html`<fieldset class="choices"${describedBy(name, errs)}><legend>${label(rule.field)}${req}</legend>
${types.map((t) => html`<label class="inline-choice"><input type="checkbox" name="${name}" value="${t}"${chosen.has(t) ? html` checked` : ''}> ${t}</label>`)}
${fieldError(name, errs)}</fieldset>`;
  }
  const multi = rule.kind === 'map' || rule.kind === 'steps' || rule.kind === 'hook-map';
  return html`<label for="${name}">${label(rule.field)}${req}</label>${hintEl}
${multi ? html`<textarea id="${name}" name="${name}" rows="5"${rule.required ? html` aria-required="true"` : ''}${describedBy(name, errs, Boolean(hint))}>${draft[name] ?? ''}</textarea>` : html`<input id="${name}" name="${name}" value="${draft[name] ?? ''}"${rule.required ? html` aria-required="true"` : ''}${describedBy(name, errs, Boolean(hint))}>`}
${fieldError(name, errs)}`;
}

/** The create form of one type; `errs` puts messages next to their fields, `draft` keeps what was typed. */
function formPage(s: Signed, t: NodeTypeDef, draft: Draft, errs: FieldErrors, status = 200, general?: string): AppResult {
  const registry = s.bridge.tenant.registry;
  const req = html` <span class="req">(required)</span>`;
  const people = s.bridge.people();
  const types = [...registry.nodeTypes.keys()].sort();
  const count = Object.keys(errs).length;
  const body = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/new">New node</a> › ${label(t.type)}</nav>
<h1>New ${t.type}</h1>
<p class="muted">${t.description} Fields marked (required) must be filled in.</p>
${count ? html`<div class="flash error" role="alert" id="form-errors"><strong>${count === 1 ? 'One thing to fix' : `${count} things to fix`}:</strong> ${general ?? Object.values(errs).join(' · ')}</div>` : ''}
<form method="post" action="/app/new" class="stack create-form" novalidate>${csrfField(s.viewer.csrf)}
<input type="hidden" name="type" value="${t.type}">
<label for="title">Title${req}</label>
<input id="title" name="title" value="${draft.title ?? ''}" maxlength="${TITLE_MAX}" aria-required="true"${describedBy('title', errs)}>
${fieldError('title', errs)}
<label for="summary">Summary${req}</label><p class="hint small" id="hint-summary">One or two sentences that stand on their own (at most ${SUMMARY_MAX} characters).</p>
<textarea id="summary" name="summary" rows="3" aria-required="true"${describedBy('summary', errs, true)}>${draft.summary ?? ''}</textarea>
${fieldError('summary', errs)}
<label for="id">Id</label><p class="hint small" id="hint-id">Leave empty to make one from the title (<code>${t.prefix}…</code>); otherwise ${SLUG_WORDS}.</p>
<input id="id" name="id" value="${draft.id ?? ''}"${describedBy('id', errs, true)}>
${fieldError('id', errs)}
<div class="two-col">
<div class="stack"><label for="status">Status</label>
<select id="status" name="status">${t.statuses.map((st) => option(st, st, draft.status ?? t.initial))}</select></div>
${
  t.queueable
    ? html`<div class="stack"><label for="priority">Priority</label>
<select id="priority" name="priority">${option('', 'none', draft.priority ?? '')}${PRIORITIES.map((p) => option(p, p, draft.priority ?? ''))}</select></div>`
    : ''
}
</div>
<label for="project">Project</label><p class="hint small" id="hint-project">Type a project's title or id; suggestions appear as you type.</p>
<input id="project" name="project" value="${draft.project ?? ''}" list="project-list" data-lookup="project" autocomplete="off"${describedBy('project', errs, true)}>
<datalist id="project-list">${projectIds(s)
    .slice(0, 200)
    .map((p) => html`<option value="${s.bridge.tenant.index.get(p)?.title ?? p}" label="${p}"></option>`)}</datalist>
${fieldError('project', errs)}
${t.fields.filter((f) => !f.identity).map((f) => customField(f, draft, errs, types))}
${
  t.queueable
    ? html`<label for="assignee">Assign to</label>
<select id="assignee" name="assignee"${describedBy('assignee', errs)}>${option('', 'nobody yet', draft.assignee ?? '')}${option('me', `me (${s.viewer.name})`, draft.assignee ?? '')}${people.filter((p) => p.id !== s.viewer.personId).map((p) => option(p.id, p.name, draft.assignee ?? ''))}</select>
${fieldError('assignee', errs)}`
    : ''
}
<fieldset class="edge-pick"><legend>Link it to another node (optional)</legend>
<label for="edge_type">Link type</label>
<select id="edge_type" name="edge_type">${personEdgeTypes(s).map((et) => option(et, et, draft.edge_type ?? 'blocks'))}</select>
<label for="edge_to">Node</label><p class="hint small" id="hint-edge_to">Type a title or an id; suggestions appear as you type.</p>
<input id="edge_to" name="edge_to" value="${draft.edge_to ?? ''}" list="edge-list" data-lookup="node" autocomplete="off"${describedBy('edge_to', errs, true)}>
<datalist id="edge-list"></datalist>
${fieldError('edge_to', errs)}
</fieldset>
<label for="body">Body (markdown, optional)</label>
<textarea id="body" name="body" rows="10"${describedBy('body', errs)}>${draft.body ?? ''}</textarea>
${fieldError('body', errs)}
<button type="submit">Create ${t.type}</button>
</form>`;
  return {
    status,
    html: layout({ title: `New ${t.type}`, viewer: s.viewer, nav: 'new', flash: s.flash, scripts: ['/app/static/pickers.js'] }, body),
  };
}

/** The type named in the address or form, one the form creates; anything else is the chooser again. */
function typeOf(s: Signed, name: string | null): NodeTypeDef | null {
  if (!name || NOT_CREATED_HERE.has(name)) return null;
  const t = s.bridge.tenant.registry.nodeTypes.get(name);
  return t && !t.identity ? t : null;
}

export async function showNew(req: AppRequest, s: Signed): Promise<AppResult> {
  const types = await typeChoices(s);
  const wanted = req.query.get('type');
  const t = typeOf(s, wanted);
  if (!t || !types.some((c) => c.type === t.type)) {
    const page = chooserPage(s, types);
    return wanted ? { ...page, status: 404 } : page;
  }
  const draft: Draft = {};
  const project = req.query.get('project');
  if (project) draft.project = project;
  return formPage(s, t, draft, {});
}

/**
 * A server message in words a person can act on: the schema's regexes and JSON paths become
 * what to type. The message keeps the server's meaning; only patterns are replaced.
 */
export function humanMessage(field: string, message: string): string {
  const m = message.trim();
  if (/must match|pattern|malformed id|\^\[a-z0-9\]/i.test(m)) return SLUG_WORDS;
  if (/required|missing|must have required property/i.test(m)) return `${label(field)} is required`;
  const max = /(?:at most|must NOT have more than|longer than)\s+(\d+)/i.exec(m);
  if (max) return `${label(field)} is too long: at most ${max[1]} characters`;
  // any other regex the message quotes is replaced by the words for ids and names
  return m.replace(/\/?\^[^\s]*\$\/?/g, `(${SLUG_WORDS})`).replace(/^\//, '');
}

/** The field a server error is about, from its details (the first named one), matched to the form's names. */
function fieldOfError(err: SvcError): { field: string; message: string } | null {
  const list = Array.isArray(err.details.errors) ? (err.details.errors as unknown[]) : [];
  for (const e of list) {
    if (typeof e !== 'object' || e === null) continue;
    const rec = e as Record<string, unknown>;
    const raw = String(rec.field ?? rec.path ?? rec.instancePath ?? '').replace(/^\/?(node\.|nodes\/\d+\/)?/, '');
    if (raw) return { field: raw.split(/[./[]/)[0]!, message: String(rec.message ?? err.message) };
    // a validate hook names the field at the start of its message ("hooks.bogus: unknown hook point")
    const named = /^([a-z_][a-z0-9_-]*)[.:[]/.exec(String(rec.message ?? ''));
    if (named) return { field: named[1]!, message: String(rec.message) };
  }
  const quoted = /^(id|title|summary|project|body|status)\b/.exec(err.message);
  return quoted ? { field: quoted[1]!, message: err.message } : null;
}

const FORM_FIELDS = new Set(['id', 'title', 'summary', 'project', 'body', 'status', 'priority', 'assignee', 'edge_to']);

export async function createNode(req: AppRequest, s: Signed): Promise<AppResult> {
  const form = req.form;
  const t = typeOf(s, form.get('type'));
  if (!t) return chooserPage(s, await typeChoices(s));
  const draft: Draft = {};
  for (const key of ['title', 'summary', 'id', 'status', 'priority', 'project', 'assignee', 'edge_type', 'edge_to', 'body'])
    draft[key] = (form.get(key) ?? '').replace(/\r\n/g, '\n');
  for (const f of t.fields)
    draft[`f_${f.field}`] = f.kind === 'type-list' ? form.getAll(`f_${f.field}`).join(',') : (form.get(`f_${f.field}`) ?? '');
  const errs: FieldErrors = {};
  const title = draft.title!.trim();
  const summary = draft.summary!.trim();
  if (!title) errs.title = 'Title is required: a few words naming it';
  else if (title.length > TITLE_MAX) errs.title = `Title is too long: at most ${TITLE_MAX} characters`;
  if (!summary) errs.summary = 'Summary is required: one or two sentences saying what this is';
  else if (summary.length > SUMMARY_MAX) errs.summary = `Summary is too long: ${summary.length} characters, at most ${SUMMARY_MAX}`;
  let id = draft.id!.trim();
  if (!id && title) id = `${t.prefix}${slugify(title) || 'untitled'}`;
  if (id && !SLUG.test(id)) errs.id = `This id cannot be used: ${SLUG_WORDS}`;
  else if (id && !id.startsWith(t.prefix)) errs.id = `A ${t.type} id starts with ${t.prefix}`;
  else if (id && s.bridge.tenant.index.has(id)) errs.id = `${id} already exists: choose another id or change the title`;
  const node: Record<string, unknown> = { id, type: t.type, title, summary };
  if (draft.status && draft.status !== t.initial) {
    if (!t.statuses.includes(draft.status)) errs.status = `Choose one of: ${t.statuses.join(', ')}`;
    else node.status = draft.status;
  }
  if (draft.project!.trim()) {
    const pick = resolvePick(s, draft.project!, projectIds(s), 'project');
    if ('error' in pick) {
      // a new project name is allowed: the value is a name, not a reference
      if (SLUG.test(draft.project!.trim())) node.project = draft.project!.trim();
      else errs.project = `${pick.error.replace(/^no project/, 'No project')}; a new project name must ${SLUG_WORDS}`;
    } else node.project = pick.id;
  }
  for (const f of t.fields) {
    if (f.identity) continue;
    const name = `f_${f.field}`;
    const value = draft[name]!.trim();
    if (!value) {
      if (f.required) errs[name] = `${label(f.field)} is required${f.kind === 'type-list' ? ': choose at least one type' : ''}`;
      continue;
    }
    if (f.kind === 'string') node[f.field] = value;
    else if (f.kind === 'slug-list' || f.kind === 'string-list' || f.kind === 'type-list') {
      const list = value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
      if (f.kind === 'slug-list' && list.some((v) => !SLUG.test(v))) errs[name] = `${label(f.field)}: each value must ${SLUG_WORDS}`;
      node[f.field] = list;
    } else {
      try {
        node[f.field] = JSON.parse(value) as unknown;
      } catch {
        errs[name] = `${label(f.field)} is not valid JSON: write it like {"key": "value"}`;
      }
    }
  }
  const edges: Array<{ type: string; to: string }> = [];
  if (draft.edge_to!.trim()) {
    const pick = resolvePick(s, draft.edge_to!, linkableIds(s), 'node');
    if ('error' in pick) errs.edge_to = pick.error.charAt(0).toUpperCase() + pick.error.slice(1);
    else if (!personEdgeTypes(s).includes(draft.edge_type!)) errs.edge_to = 'Choose a link type from the list';
    else edges.push({ type: draft.edge_type!, to: pick.id });
  }
  if (draft.assignee) {
    const assignee = draft.assignee === 'me' ? s.viewer.personId : draft.assignee;
    if (s.bridge.tenant.index.get(assignee)?.type !== 'person') errs.assignee = 'Choose a person from the list';
    else edges.push({ type: 'assigned', to: assignee });
  }
  if (edges.length) node.edges = edges;
  if (draft.body!.trim()) node.body = draft.body;
  if (Object.keys(errs).length) return formPage(s, t, draft, errs, 422);

  const answer = await s.bridge.createNode(node);
  const first = answer.results[0] as Record<string, unknown> | undefined;
  if (first?.status === 'failed') {
    const e = (first.error ?? {}) as { code?: string; message?: string; details?: Record<string, unknown> };
    const err = new SvcError(Number(first.http_status ?? 422), String(e.code), String(e.message), e.details ?? {});
    return formPage(s, t, draft, errorsFor(err), err.status >= 400 && err.status < 500 ? err.status : 422);
  }
  // priority has its own operation (put_node ignores it): set right after, as a person would
  if (draft.priority && PRIORITIES.includes(draft.priority)) {
    try {
      await s.bridge.setPriority(id, draft.priority);
    } catch (err) {
      if (!isSvcError(err) || err.status >= 500) throw err;
      s.setFlash('error', `Created ${title}, but the priority was not set: ${err.message}`);
      return { redirect: `/app/nodes/${encodeURIComponent(id)}` };
    }
  }
  s.setFlash('ok', `Created ${t.type} “${title}”`);
  return { redirect: `/app/nodes/${encodeURIComponent(id)}` };
}

/** A refused put_node as messages next to the fields (the form's own names), or one message at the top. */
function errorsFor(err: SvcError): FieldErrors {
  if (err.status === 409 && err.code === 'conflict')
    return { id: 'A node with this id already exists: choose another id or change the title' };
  if (err.status === 403) return { title: `Not allowed: ${err.message}` };
  const at = fieldOfError(err);
  if (at) {
    const name = FORM_FIELDS.has(at.field) ? at.field : `f_${at.field}`;
    return { [FORM_FIELDS.has(name) || name.startsWith('f_') ? name : 'title']: humanMessage(at.field, at.message) };
  }
  return { title: humanMessage('node', err.message) };
}
