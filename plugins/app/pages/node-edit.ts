/**
 * Editing a node's title, summary, project and its type's fields from the node page (issue
 * 25 item 1), through patch_node with the revision the page showed: a change saved by
 * someone else meanwhile is a 409 that shows their values beside what the person typed
 * (kept in the form), as the body edit does; nothing is written over their change.
 */
import { isSvcError, SvcError, errors } from '../../../kernel/errors.js';
import type { NodeTypeDef } from '../../../kernel/registry.js';
import { csrfField, html, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { customField, humanMessage, label, projectIds, resolvePick, SLUG_WORDS } from './create.js';
import { nodeFields, nodePage } from './node.js';
import { personName } from './words.js';

type Values = Record<string, string>;

export interface FieldsConflict {
  /** what the person typed (form names: title, summary, project, f_<field>) */
  mine: Values;
  /** the node's values now (same names) */
  theirs: Values;
  revision: string;
  changedBy: string | null;
}

/** The editable fields of the type (identity facts are the identity operations' own). */
const editable = (t: NodeTypeDef | undefined) => (t?.fields ?? []).filter((f) => !f.identity);

/** The node's current values as the form shows them: lists comma-joined, maps as JSON. */
function valuesOf(t: NodeTypeDef | undefined, fm: Record<string, unknown>): Values {
  const v: Values = { title: String(fm.title ?? ''), summary: String(fm.summary ?? ''), project: String(fm.project ?? '') };
  for (const f of editable(t)) {
    const x = fm[f.field];
    v[`f_${f.field}`] =
      x === undefined || x === null
        ? ''
        : Array.isArray(x) && f.kind !== 'steps'
          ? x.map(String).join(',')
          : typeof x === 'string'
            ? x
            : JSON.stringify(x, null, 2);
  }
  return v;
}

function form(s: Signed, id: string, revision: string, t: NodeTypeDef | undefined, v: Values, prefix: string): Html {
  const types = [...s.bridge.tenant.registry.nodeTypes.keys()].sort();
  const idOf = (name: string) => `${prefix}${name}`;
  return html`<form method="post" action="/app/nodes/${encodeURIComponent(id)}/fields" class="stack">${csrfField(s.viewer.csrf)}
<input type="hidden" name="revision" value="${revision}">
<label for="${idOf('title')}">Title</label><input id="${idOf('title')}" name="title" value="${v.title}" maxlength="200" required>
<label for="${idOf('summary')}">Summary</label><textarea id="${idOf('summary')}" name="summary" rows="3" required>${v.summary}</textarea>
<label for="${idOf('project')}">Project (title or id; empty for none)</label>
<input id="${idOf('project')}" name="project" value="${v.project}" list="${idOf('project-list')}" data-lookup="project" autocomplete="off"><datalist id="${idOf('project-list')}"></datalist>
${prefix ? '' : editable(t).map((f) => customField(f, v, {}, types))}
<button type="submit">Save</button></form>`;
}

/** "Edit title, summary and fields": a disclosure under the summary. */
export function editFieldsForm(s: Signed, id: string, revision: string, t: NodeTypeDef | undefined, fm: Record<string, unknown>): Html {
  return html`<details class="edit-fields"><summary>Edit title, summary and fields</summary>
${form(s, id, revision, t, valuesOf(t, fm), '')}</details>`;
}

/** The 409 panel: their values beside what the person typed, and the form again on their revision. */
export function fieldsConflictPanel(s: Signed, id: string, c: FieldsConflict): Html {
  const changed = Object.keys(c.mine).filter((k) => (c.mine[k] ?? '') !== (c.theirs[k] ?? ''));
  const t = s.bridge.tenant.registry.nodeTypes.get(s.bridge.tenant.index.get(id)?.type ?? '');
  return html`<section class="conflict" aria-labelledby="fconflict-h"><h2 id="fconflict-h">Someone else changed this node</h2>
<p>${c.changedBy ? html`<strong>${c.changedBy}</strong> saved` : 'Another change was saved'} after you opened the page, so your edit was not written over it.
Their values and yours differ here; your values are kept in the form below. Change what you need and save again.</p>
<div class="table-wrap"><table><caption class="sr-only">Their values and yours</caption><thead><tr><th scope="col">Field</th><th scope="col">Theirs (saved)</th><th scope="col">Yours (not saved)</th></tr></thead>
<tbody>${changed.map((k) => html`<tr><th scope="row">${label(k.replace(/^f_/, ''))}</th><td>${c.theirs[k] ?? ''}</td><td>${c.mine[k] ?? ''}</td></tr>`)}</tbody></table></div>
${form(s, id, c.revision, t, c.mine, 'mine-')}</section>`;
}

/** The fields of the form as patch_node's `set` (changed ones only, a cleared optional one as null). */
function setOf(s: Signed, t: NodeTypeDef | undefined, mine: Values, shown: Values): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  const title = mine.title!.trim();
  const summary = mine.summary!.trim();
  if (!title) throw errors.validation('the title is required: a few words naming it', [{ field: 'title', message: 'required' }]);
  if (!summary)
    throw errors.validation('the summary is required: one or two sentences saying what this is', [
      { field: 'summary', message: 'required' },
    ]);
  if (title !== shown.title) set.title = title;
  if (summary !== shown.summary) set.summary = summary;
  const project = mine.project!.trim();
  if (project !== shown.project) {
    if (!project) set.project = null;
    else {
      const pick = resolvePick(s, project, projectIds(s), 'project');
      if ('id' in pick) set.project = pick.id;
      else if (/^[a-z0-9][a-z0-9-]*$/.test(project)) set.project = project;
      else throw errors.validation(`${pick.error}; a new project name must ${SLUG_WORDS}`, [{ field: 'project' }]);
    }
  }
  for (const f of editable(t)) {
    const key = `f_${f.field}`;
    const value = (mine[key] ?? '').trim();
    if (value === (shown[key] ?? '').trim()) continue;
    if (!value) {
      if (f.required) throw errors.validation(`${label(f.field)} is required`, [{ field: f.field }]);
      set[f.field] = null;
    } else if (f.kind === 'string') set[f.field] = value;
    else if (f.kind === 'slug-list' || f.kind === 'string-list' || f.kind === 'type-list')
      set[f.field] = value
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    else {
      try {
        set[f.field] = JSON.parse(value) as unknown;
      } catch {
        throw errors.validation(`${label(f.field)} is not valid JSON: write it like {"key": "value"}`, [{ field: f.field }]);
      }
    }
  }
  return set;
}

/** POST /app/nodes/{id}/fields: patch_node with the revision echo. */
export async function editFields(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const revision = req.form.get('revision') ?? '';
  const read = nodeFields(await s.bridge.getNode(id));
  const t = s.bridge.tenant.registry.nodeTypes.get(read.type);
  const now = valuesOf(t, read.frontmatter);
  const mine: Values = {
    title: req.form.get('title') ?? '',
    summary: (req.form.get('summary') ?? '').replace(/\r\n/g, '\n'),
    project: req.form.get('project') ?? '',
  };
  for (const f of editable(t))
    mine[`f_${f.field}`] =
      f.kind === 'type-list' ? req.form.getAll(`f_${f.field}`).join(',') : (req.form.get(`f_${f.field}`) ?? '').replace(/\r\n/g, '\n');
  try {
    // compared with the node as it is now: a stale revision is refused by patch_node below, whatever changed
    const set = setOf(s, t, mine, now);
    const result = await s.bridge.patchNode({ id, revision, set });
    s.setFlash(
      'ok',
      result.status === 'skipped' || Object.keys(set).length === 0 ? 'Nothing changed' : `Saved: ${Object.keys(set).map(label).join(', ')}`,
    );
    return { redirect: `/app/nodes/${encodeURIComponent(id)}` };
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500 || err.status === 404) throw err;
    if (err.status === 409 && err.code === 'conflict' && 'current_revision' in err.details) {
      const last = s.bridge.has('history') ? (await s.bridge.getNodeHistory(id, 1)).history[0] : undefined;
      const changedBy = last
        ? last.actor === s.viewer.personId
          ? 'You (in another window)'
          : (personName(s, last.actor) ?? String(last.actor_name ?? last.actor))
        : null;
      return nodePage(s, id, { error: err, fieldsConflict: { mine, theirs: now, revision: read.revision, changedBy }, status: 409 });
    }
    const field = Array.isArray(err.details.errors) ? String((err.details.errors[0] as { field?: string } | undefined)?.field ?? '') : '';
    // a schema pattern in the message becomes the words for what to type
    const message = /must match|pattern|\^\[/.test(err.message)
      ? `${label(field || 'value')}: ${humanMessage(field, err.message)}`
      : err.message;
    return nodePage(s, id, { error: new SvcError(err.status, err.code, message, err.details) });
  }
}
