/**
 * The hook editor (issue 25 item 5): write a new schema node or change one's hooks in the
 * browser. The form works as plain textareas; static/hook-editor.js (CodeMirror 6, bundled by
 * `npm run build:editor` from plugins/app/editor/hook-editor.js) turns each hook textarea into
 * an editor with JavaScript highlighting and keeps the textarea in step, so the post is the
 * same either way. Saving proposes: `put_node` writes the schema node (the kernel forces a new
 * one to proposed and demotes a changed active one), with the revision the page was drawn
 * from, so someone else's change in between is a 409 shown with the text kept. "Dry run"
 * runs the draft as typed (`dry_run_schema` with the markdown) without saving it.
 */
import { serializeNode, STAMP_KEYS } from '../../../kernel/codec.js';
import { errors, isSvcError, SvcError } from '../../../kernel/errors.js';
import { csrfField, html, layout } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { dryRunTable, pickableNodes } from './schema-proposal.js';
import { schemaCrumbs } from './schema.js';

const ID = /^schema-[a-z0-9][a-z0-9-]*$/;
const STAMPS = [...STAMP_KEYS, 'created', 'updated', 'proposed_by', 'revision'];
const HOOKS = [
  {
    name: 'transition',
    label: 'Transition hook',
    help: 'Receives {node, from, to, actor}; returns {allow: true} or {allow: false, reason}.',
    example:
      "(input) => input.to !== 'done' || input.from === 'review'\n  ? { allow: true }\n  : { allow: false, reason: 'move to review first' }",
  },
  {
    name: 'validate',
    label: 'Validate hook',
    help: 'Receives {node}; returns {ok: true, errors: []} or {ok: false, errors: [messages]}.',
    example: '',
  },
] as const;

interface Draft {
  id: string;
  summary: string;
  appliesTo: string;
  hooks: Record<string, string>;
  body: string;
  /** the revision the form was drawn from; '' for a new schema node */
  revision: string;
  /** the existing node's other fields (statuses, edge_types, title), kept on save */
  rest: Record<string, unknown>;
  /**
   * The status written: `proposed` for a new or retired node; an existing node keeps its own,
   * and the kernel demotes a changed active one to proposed (a schema has no active -> proposed move).
   */
  status: string;
  nodes: string;
}

const crlf = (v: string | null) => (v ?? '').replace(/\r\n/g, '\n');

function draftFromForm(form: URLSearchParams, s: Signed): Draft {
  const id = (form.get('id') ?? '').trim();
  const revision = form.get('revision') ?? '';
  const existing = revision ? s.bridge.tenant.index.get(id) : undefined;
  const rest = existing
    ? Object.fromEntries(
        Object.entries(existing.frontmatter).filter(
          ([k]) => ![...STAMPS, 'id', 'type', 'status', 'summary', 'applies_to', 'hooks'].includes(k),
        ),
      )
    : {};
  return {
    id,
    summary: crlf(form.get('summary')).trim(),
    appliesTo: (form.get('applies_to') ?? '').trim(),
    hooks: Object.fromEntries(HOOKS.map((h) => [h.name, crlf(form.get(h.name)).trim()])),
    body: crlf(form.get('body')),
    revision,
    rest,
    status: existing && existing.status !== 'retired' ? existing.status : 'proposed',
    nodes: (form.get('nodes') ?? '').trim(),
  };
}

function draftFromNode(s: Signed, id: string): Draft {
  const r = s.bridge.tenant.index.get(id);
  if (!r || r.type !== 'schema') throw errors.notFound(`schema node ${id}`);
  const fm = r.frontmatter;
  const hooks = fm.hooks && typeof fm.hooks === 'object' ? (fm.hooks as Record<string, unknown>) : {};
  return {
    id,
    summary: String(fm.summary ?? ''),
    appliesTo: Array.isArray(fm.applies_to) ? fm.applies_to.join(', ') : String(fm.applies_to ?? ''),
    hooks: Object.fromEntries(HOOKS.map((h) => [h.name, typeof hooks[h.name] === 'string' ? String(hooks[h.name]) : ''])),
    body: r.body,
    revision: r.revision,
    status: r.status === 'retired' ? 'proposed' : r.status,
    rest: Object.fromEntries(
      Object.entries(fm).filter(([k]) => ![...STAMPS, 'id', 'type', 'status', 'summary', 'applies_to', 'hooks'].includes(k)),
    ),
    nodes: '',
  };
}

const typesOf = (d: Draft) =>
  d.appliesTo
    .split(/[\s,]+/)
    .map((t) => t.trim())
    .filter(Boolean);

/** The draft as the schema node's markdown (the codec's canonical form). */
function markdownOf(d: Draft): string {
  const types = typesOf(d);
  if (!ID.test(d.id))
    throw errors.validation('the id must start with schema- and use lowercase letters, digits and dashes', [{ field: 'id' }]);
  if (!d.summary) throw errors.validation('a summary is required: one sentence saying what the rule does', [{ field: 'summary' }]);
  if (types.length === 0)
    throw errors.validation('name at least one node type it applies to (for example task)', [{ field: 'applies_to' }]);
  const hooks = Object.fromEntries(Object.entries(d.hooks).filter(([, src]) => src !== ''));
  if (Object.keys(hooks).length === 0) throw errors.validation('write at least one hook', [{ field: 'hooks' }]);
  const fm = {
    ...d.rest,
    id: d.id,
    type: 'schema',
    status: d.status,
    summary: d.summary,
    applies_to: types.length === 1 ? types[0] : types,
    hooks,
  };
  return serializeNode(fm, d.body);
}

function editorPage(
  s: Signed,
  d: Draft,
  state: { error?: SvcError | null; dryRun?: Awaited<ReturnType<Signed['bridge']['dryRunSchema']>> | null; status?: number } = {},
): AppResult {
  const isNew = d.revision === '';
  const csrf = csrfField(s.viewer.csrf);
  const known = [...s.bridge.tenant.registry.nodeTypes.keys()].sort();
  const suggestions = pickableNodes(
    s,
    typesOf(d).filter((t) => known.includes(t)),
  ).slice(0, 50);
  const error = state.error ? html`<p class="flash error" role="alert">${state.error.message}</p>` : '';
  const body = html`${schemaCrumbs([isNew ? 'New schema' : d.id, isNew ? null : `/app/schema/proposals/${encodeURIComponent(d.id)}`], ...(isNew ? [] : [['Edit', null] as [string, null]]))}
<h1>${isNew ? 'Write a new schema' : `Edit ${d.id}`}</h1>
<p class="muted">Saving proposes it: it goes live only when another person approves it. Hooks are JavaScript function expressions run in the sandbox.</p>
${error}
<form method="post" action="/app/schema/editor" class="stack schema-editor">${csrf}
<input type="hidden" name="revision" value="${d.revision}">
<label for="schema-id">Id</label>
<input id="schema-id" name="id" value="${d.id}" required pattern="schema-[a-z0-9][a-z0-9\\-]*" ${isNew ? '' : html`readonly`} aria-describedby="schema-id-help">
<span id="schema-id-help" class="muted small">schema- then lowercase letters, digits and dashes${isNew ? '' : ' (fixed once written)'}</span>
<label for="schema-summary">Summary</label>
<input id="schema-summary" name="summary" value="${d.summary}" required maxlength="500">
<label for="schema-applies">Applies to (node types, comma separated)</label>
<input id="schema-applies" name="applies_to" value="${d.appliesTo}" required list="schema-types">
<datalist id="schema-types">${known.map((t) => html`<option value="${t}"></option>`)}</datalist>
${HOOKS.map(
  (h) => html`<label for="hook-${h.name}">${h.label}</label>
<span id="hook-${h.name}-help" class="muted small">${h.help}</span>
<textarea id="hook-${h.name}" name="${h.name}" rows="8" spellcheck="false" data-code-editor aria-describedby="hook-${h.name}-help" placeholder="${h.example}">${d.hooks[h.name] ?? ''}</textarea>`,
)}
<label for="schema-body">Why this rule exists (markdown)</label>
<textarea id="schema-body" name="body" rows="3">${d.body}</textarea>
<div class="actions"><button type="submit">${isNew ? 'Propose' : 'Propose this change'}</button></div>
<fieldset class="stack"><legend>Try it first</legend>
<label for="schema-nodes">Nodes to dry-run against (ids, comma separated, up to 10)</label>
<input id="schema-nodes" name="nodes" value="${d.nodes}" list="schema-node-ids" aria-describedby="schema-nodes-help">
<span id="schema-nodes-help" class="muted small">Runs the draft as typed in the sandbox; nothing is saved.</span>
<datalist id="schema-node-ids">${suggestions.map((n) => html`<option value="${n.id}">${n.title}</option>`)}</datalist>
<button type="submit" formaction="/app/schema/editor/dry-run" class="secondary">Dry run the draft</button></fieldset>
</form>
${state.dryRun ? dryRunTable(state.dryRun) : ''}`;
  return {
    status: state.status ?? 200,
    html: layout(
      {
        title: isNew ? 'New schema' : `Edit ${d.id}`,
        viewer: s.viewer,
        nav: 'schema',
        flash: s.flash,
        scripts: ['/app/static/hook-editor.js'],
      },
      body,
    ),
  };
}

/** GET /app/schema/editor?id= (change a schema node) or ?applies_to= (a new one for that type). */
export async function showEditor(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.query.get('id');
  if (id) return editorPage(s, draftFromNode(s, id));
  const appliesTo = (req.query.get('applies_to') ?? '').trim();
  const slug = appliesTo.replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '');
  return editorPage(s, {
    id: slug ? `schema-${slug}-rule` : '',
    summary: '',
    appliesTo,
    hooks: Object.fromEntries(HOOKS.map((h) => [h.name, ''])),
    body: '',
    revision: '',
    rest: {},
    status: 'proposed',
    nodes: '',
  });
}

/** POST /app/schema/editor: propose (put_node with the revision echo); a refusal comes back with the text kept. */
export async function saveEditor(req: AppRequest, s: Signed): Promise<AppResult> {
  const d = draftFromForm(req.form, s);
  try {
    const answer = await s.bridge.proposeSchema(markdownOf(d), d.revision || null);
    const first = (answer.results[0] ?? {}) as Record<string, unknown>;
    if (first.status === 'failed') {
      const e = (first.error ?? {}) as Record<string, unknown>;
      throw new SvcError(
        typeof first.http_status === 'number' ? first.http_status : 422,
        String(e.code),
        String(e.message),
        (e.details ?? {}) as Record<string, unknown>,
      );
    }
    s.setFlash('ok', `Proposed ${d.id}: another person must approve it before it goes live`);
    return { redirect: `/app/schema/proposals/${encodeURIComponent(d.id)}` };
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    const conflict = err.status === 409 && err.code === 'conflict';
    const message =
      conflict && d.revision
        ? `${err.message}. Someone changed ${d.id} since you opened it; your text is kept below. Open the proposal to see their version.`
        : err.message;
    return editorPage(s, d, { error: new SvcError(err.status, err.code, message, err.details), status: err.status });
  }
}

/** POST /app/schema/editor/dry-run: the draft as typed against the listed nodes, nothing saved. */
export async function dryRunEditor(req: AppRequest, s: Signed): Promise<AppResult> {
  const d = draftFromForm(req.form, s);
  const ids = d.nodes.split(/[\s,]+/).filter(Boolean);
  try {
    if (ids.length === 0) throw errors.validation('list the ids of the nodes to dry-run against', [{ field: 'nodes' }]);
    const run = await s.bridge.dryRunSchema({ markdown: markdownOf(d), node_ids: ids });
    return editorPage(s, d, { dryRun: run });
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    return editorPage(s, d, { error: err, status: err.status });
  }
}
