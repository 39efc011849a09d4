/**
 * A node: its markdown rendered safely, frontmatter, edges both ways, resolution, findings,
 * supersession, lease, history with diffs, and the actions (claim, release, status,
 * priority, agent-ready, add edge, edit body with the revision echo). Every action is the
 * core operation REST and MCP use; an error comes back inline on the same page.
 */
import { isSvcError, SvcError } from '../../../kernel/errors.js';
import { csrfField, html, layout, raw, type Html, diffLineClass } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { markdownToSafeHtml } from '../markdown.js';
import { commentRedirect, commentsSection, type CommentEdit } from './comments.js';
import { editFieldsForm, fieldsConflictPanel, type FieldsConflict } from './node-edit.js';
import { assignSection, edgeForm } from './node-people.js';
import { nodeLink } from './queue.js';
import { describeChange, describeHistory, fieldValueHtml, personLink, personName, STAMP_FIELDS } from './words.js';

const HIDDEN_FIELDS = new Set(['edges', 'summary', 'title', 'id', 'body']);

/** A JSON object, or an empty one for anything else (answers are read defensively: a page never 500s on an odd value). */
export function asObject(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The fields of get_node's answer this page shows, as values it can render. */
export function nodeFields(read: Record<string, unknown>) {
  return {
    type: String(read.type),
    frontmatter: asObject(read.frontmatter),
    body: typeof read.body === 'string' ? read.body : '',
    revision: String(read.revision),
    resolution: read.resolution === undefined ? undefined : asObject(read.resolution),
    open_findings: Array.isArray(read.open_findings) ? read.open_findings.map(asObject) : [],
    superseded_by: read.superseded_by,
  };
}

interface Conflict {
  mine: string;
  current: ReturnType<typeof nodeFields>;
  changedBy: string | null;
}

function when(iso: string): Html {
  return html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 16)} UTC</time>`;
}

export async function nodePage(
  s: Signed,
  id: string,
  opts: {
    error?: SvcError;
    conflict?: Conflict;
    fieldsConflict?: FieldsConflict;
    status?: number;
    commentDraft?: string;
    commentEdit?: CommentEdit;
  } = {},
): Promise<AppResult> {
  const b = s.bridge;
  const node = nodeFields(await b.getNode(id));
  const record = b.tenant.index.get(id)!;
  const registry = b.tenant.registry;
  const typeDef = registry.nodeTypes.get(node.type);
  const fm = node.frontmatter;
  const title = record.title;
  const lease = b.lease(id);
  const mine = lease && lease.by === s.viewer.personId;
  const history = b.has('history') ? await b.getNodeHistory(id, 20) : null;
  // comments have their own section (pages/comments.ts), not a line each among the edges
  const inbound = b.tenant.index.inboundOf(id).filter((e) => e.edge.type !== 'discusses');
  const outbound = record.edges;
  const moves = typeDef ? (typeDef.moves[node.frontmatter.status as string] ?? typeDef.statuses) : [];
  const statusChoices = [...new Set([String(fm.status), ...moves])];
  const csrf = csrfField(s.viewer.csrf);
  const action = (name: string) => `/app/nodes/${encodeURIComponent(id)}/${name}`;
  const err = opts.error;
  const resolution = node.resolution;
  const comments = await commentsSection(s, id, opts.commentDraft, opts.commentEdit);
  const described = history ? await describeHistory(s, id, history.history, history.total) : [];
  const fields = Object.entries(fm).filter(([k]) => !HIDDEN_FIELDS.has(k));
  const stamps = fields.filter(([k]) => STAMP_FIELDS.has(k));

  const body = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/queue">My queue</a> › <code>${id}</code></nav>
<h1>${title}</h1>
<p class="meta" data-live="meta"><span class="badge">${node.type}</span> <span class="badge status">${fm.status}</span>
${fm.priority ? html`<span class="badge">${fm.priority}</span>` : ''} ${fm.readiness ? html`<span class="badge">ready for ${fm.readiness}</span>` : ''}
${fm.project ? html`<span class="muted">project ${fieldValueHtml(s, fm.project)}</span>` : ''}</p>
${err ? html`<div class="flash error" role="alert"><strong>${err.status === 409 ? 'Not done: ' : 'Could not do that: '}</strong>${err.message} <span class="muted">(${err.status} ${err.code})</span></div>` : ''}
${resolution ? html`<p class="notice">Resolved by ${nodeLink(String(resolution.id ?? resolution.by ?? ''), String(resolution.title ?? resolution.id ?? ''))}${resolution.lagging ? ' (the status here still says open: the resolution wins)' : ''}</p>` : ''}
${node.superseded_by ? html`<p class="notice">Superseded by ${[node.superseded_by].flat().map((x) => (typeof x === 'string' ? nodeLink(x) : nodeLink(String((x as { id?: string }).id ?? ''))))}</p>` : ''}
${node.open_findings.length ? html`<section class="notice" aria-labelledby="findings-h"><h2 id="findings-h">Open findings</h2><ul>${node.open_findings.map((f) => html`<li>${nodeLink(String(f.id), String(f.title ?? f.summary ?? f.id))} ${f.check ? html`<span class="muted">(${f.check})</span>` : ''}</li>`)}</ul></section>` : ''}
${opts.conflict ? conflictPanel(s, id, opts.conflict) : ''}
${opts.fieldsConflict ? fieldsConflictPanel(s, id, opts.fieldsConflict) : ''}
<div class="node-grid">
<div class="node-main">
<section aria-labelledby="summary-h"><h2 id="summary-h" class="sr-only">Summary</h2><p class="summary">${fm.summary}</p>
${editFieldsForm(s, id, node.revision, typeDef, fm)}</section>
<section aria-labelledby="body-h"><h2 id="body-h">Body</h2>
<div class="markdown">${node.body.trim() ? raw(markdownToSafeHtml(node.body)) : html`<p class="muted">No body.</p>`}</div>
<details><summary>Edit the body</summary>
<form method="post" action="${action('edit')}" class="stack">${csrf}
<input type="hidden" name="revision" value="${node.revision}">
<label for="body-text">Markdown body (at most 8 KB)</label>
<textarea id="body-text" name="body" rows="12">${node.body}</textarea>
<button type="submit">Save body</button></form></details>
</section>
<section aria-labelledby="edges-h" data-live="edges"><h2 id="edges-h">Edges</h2>
<div class="two-col"><div><h3>From this node</h3>${outbound.length ? html`<ul class="plain">${outbound.map((e) => html`<li><span class="edge">${e.type}</span> ${personName(s, e.to) ? personLink(s, e.to) : nodeLink(e.to, b.tenant.index.get(e.to)?.title ?? e.to)}</li>`)}</ul>` : html`<p class="muted">None.</p>`}</div>
<div><h3>To this node</h3>${inbound.length ? html`<ul class="plain">${inbound.map((e) => html`<li>${personName(s, e.from) ? personLink(s, e.from) : nodeLink(e.from, b.tenant.index.get(e.from)?.title ?? e.from)} <span class="edge">${registry.edgeTypes.get(e.edge.type)?.inverse_label ?? e.edge.type}</span> <span class="muted small">(${e.edge.type})</span></li>`)}</ul>` : html`<p class="muted">None.</p>`}</div></div>
<p><a href="/app/nodes/${encodeURIComponent(id)}/graph">Picture of the neighborhood</a>${b.has('analytics') ? html` · <a href="/app/programs/${encodeURIComponent(id)}">Program tree</a>` : ''}</p>
</section>
<section aria-labelledby="fields-h"><h2 id="fields-h">Fields</h2>
<div data-live="fields"><dl class="fields">${fields.filter(([k]) => !STAMP_FIELDS.has(k)).map(([k, v]) => html`<dt>${k}</dt><dd>${fieldValueHtml(s, v)}</dd>`)}</dl>
<details class="stamps"><summary>Details</summary>
<dl class="fields">${stamps.map(([k, v]) => html`<dt>${k}</dt><dd>${fieldValueHtml(s, v)}</dd>`)}
<dt>revision</dt><dd><code>${node.revision}</code></dd></dl></details></div>
</section>
${
  history
    ? html`<section aria-labelledby="history-h" data-live="history"><h2 id="history-h">History</h2>
<ol class="history">${described.map(
        ({ entry: h, who, what }) =>
          html`<li>${who} ${what} <span class="muted small">· ${when(h.date)} · <a href="/app/nodes/${encodeURIComponent(id)}/history/${h.sha}">the change <code>${h.short}</code></a>${h.internal ? ' · internal' : ''}</span></li>`,
      )}</ol>
${history.total > history.count ? html`<p class="muted">${history.total - history.count} older change(s) not shown.</p>` : ''}</section>`
    : ''
}
${comments}
</div>
<aside class="node-side" aria-label="Actions">
<section aria-labelledby="lease-h" data-live="lease"><h2 id="lease-h">Lease</h2>
${lease ? html`<p>${mine ? 'You hold it' : html`Held by ${personLink(s, lease.by)}`}${lease.agent ? ` (agent ${lease.agent})` : ''}, ${lease.state}, until ${when(lease.expires_at)}.</p>` : html`<p class="muted">Nobody holds it.</p>`}
${
  typeDef?.queueable && b.has('leases')
    ? html`<div class="actions">
${!mine ? html`<form method="post" action="${action('claim')}">${csrf}<button type="submit">Claim</button></form>` : ''}
${mine ? html`<form method="post" action="${action('release')}">${csrf}<button type="submit">Release</button></form>` : ''}</div>`
    : ''
}
</section>
<section aria-labelledby="status-h"><h2 id="status-h">Status</h2>
<form method="post" action="${action('status')}" class="row">${csrf}
<label for="status-sel" class="sr-only">New status</label>
<select id="status-sel" name="status">${statusChoices.map((st) => html`<option value="${st}"${st === fm.status ? html` selected` : ''}>${st}</option>`)}</select>
<button type="submit">Set status</button></form></section>
<section aria-labelledby="prio-h"><h2 id="prio-h">Priority</h2>
<form method="post" action="${action('priority')}" class="row">${csrf}
<label for="prio-sel" class="sr-only">Priority</label>
<select id="prio-sel" name="priority">${['p1', 'p2', 'p3', 'none'].map((p) => html`<option value="${p}"${p === (fm.priority ?? 'none') ? html` selected` : ''}>${p}</option>`)}</select>
<button type="submit">Set priority</button></form></section>
<section aria-labelledby="ready-h"><h2 id="ready-h">Readiness</h2>
<form method="post" action="${action('readiness')}">${csrf}
${fm.readiness === 'agent' ? html`<input type="hidden" name="readiness" value="none"><button type="submit">Clear agent-ready</button>` : html`<input type="hidden" name="readiness" value="agent"><button type="submit">Mark agent-ready</button>`}</form></section>
${typeDef?.queueable ? assignSection(s, id, record) : ''}
${edgeForm(s, id)}
</aside>
</div>`;
  return {
    status: opts.status ?? (err ? err.status : 200),
    html: layout(
      { title, viewer: s.viewer, flash: s.flash, live: new URLSearchParams({ node: id }).toString(), scripts: ['/app/static/pickers.js'] },
      body,
    ),
  };
}

function conflictPanel(s: Signed, id: string, c: Conflict): Html {
  return html`<section class="conflict" aria-labelledby="conflict-h"><h2 id="conflict-h">Someone else changed this node</h2>
<p>${c.changedBy ? html`<strong>${c.changedBy}</strong> saved` : 'Another change was saved'} after you opened the page, so your edit was not written over it.
Their version is below; your text is kept in the form. Merge what you need and save again.</p>
<h3>Their current body</h3>
<div class="markdown">${raw(markdownToSafeHtml(c.current.body))}</div>
<form method="post" action="/app/nodes/${encodeURIComponent(id)}/edit" class="stack">${csrfField(s.viewer.csrf)}
<input type="hidden" name="revision" value="${c.current.revision}">
<label for="mine-text">Your text</label>
<textarea id="mine-text" name="body" rows="10">${c.mine}</textarea>
<button type="submit">Save over their version</button></form></section>`;
}

export async function showNode(req: AppRequest, s: Signed): Promise<AppResult> {
  // a comment is read where it was said: on its node's page (pages/comments.ts)
  return commentRedirect(s, req.params.id!) ?? nodePage(s, req.params.id!);
}

/** Runs one core operation for a node form; its error re-renders the page inline. */
export async function act(s: Signed, id: string, done: string, run: () => Promise<unknown>): Promise<AppResult> {
  try {
    const result = (await run()) as { warnings?: string[]; status?: string } | undefined;
    const warnings = result?.warnings?.length ? ` (${result.warnings.join('; ')})` : '';
    s.setFlash('ok', `${done}${result?.status === 'skipped' ? ': nothing to change' : ''}${warnings}`);
    return { redirect: `/app/nodes/${encodeURIComponent(id)}` };
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500 || err.status === 404) throw err;
    return nodePage(s, id, { error: err });
  }
}

export const claimNode = (req: AppRequest, s: Signed) => act(s, req.params.id!, 'Claimed', () => s.bridge.claimNode(req.params.id!));
export const releaseNode = (req: AppRequest, s: Signed) => act(s, req.params.id!, 'Released', () => s.bridge.releaseNode(req.params.id!));
export const statusNode = (req: AppRequest, s: Signed) =>
  act(s, req.params.id!, `Status set to ${req.form.get('status') ?? ''}`, () =>
    s.bridge.setStatus(req.params.id!, req.form.get('status') ?? ''),
  );
export const priorityNode = (req: AppRequest, s: Signed) =>
  act(s, req.params.id!, `Priority set to ${req.form.get('priority') ?? ''}`, () =>
    s.bridge.setPriority(req.params.id!, req.form.get('priority') ?? ''),
  );
export const readinessNode = (req: AppRequest, s: Signed) =>
  act(s, req.params.id!, req.form.get('readiness') === 'agent' ? 'Marked agent-ready' : 'Readiness cleared', () =>
    s.bridge.setReadiness(req.params.id!, req.form.get('readiness') ?? ''),
  );
/** Body edit: a full put of the node as read, with the new body and the revision echo. */
export async function editNode(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const mine = (req.form.get('body') ?? '').replace(/\r\n/g, '\n');
  const revision = req.form.get('revision') ?? '';
  const current = nodeFields(await s.bridge.getNode(id));
  const answer = await s.bridge.putNode({ ...current.frontmatter, body: mine }, revision);
  const first = asObject(answer.results[0]);
  if (first.status !== 'failed') {
    const warnings = Array.isArray(first.warnings) ? first.warnings : [];
    s.setFlash('ok', first.status === 'skipped' || warnings.includes('no change') ? 'Body unchanged' : 'Body saved');
    return { redirect: `/app/nodes/${encodeURIComponent(id)}` };
  }
  // a failed entry carries the error envelope's fields and the HTTP status the single write would have had
  const failure = asObject(first.error);
  const error = new SvcError(
    typeof first.http_status === 'number' ? first.http_status : 422,
    String(failure.code),
    String(failure.message),
    asObject(failure.details),
  );
  if (error.status === 409 && error.code === 'conflict') {
    const history = s.bridge.has('history') ? await s.bridge.getNodeHistory(id, 1) : null;
    const last = history?.history[0];
    return nodePage(s, id, {
      error,
      conflict: { mine, current, changedBy: last ? String(last.actor_name ?? last.actor) : null },
      status: 409,
    });
  }
  return nodePage(s, id, { error });
}

/** One change of the node's history with its patch as a diff. */
export async function showHistoryEntry(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const d = (await s.bridge.getHistoryEntry(id, req.params.sha!)) as {
    sha: string;
    short: string;
    actor: string;
    actor_name?: string;
    date: string;
    message: string;
    change: string;
    patch: string;
    internal: boolean;
  };
  const lines = d.patch.split('\n');
  const body = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/queue">My queue</a> › <a href="/app/nodes/${encodeURIComponent(id)}">${id}</a> › <code>${d.short}</code></nav>
<h1>${personName(s, d.actor) ?? d.actor_name ?? d.actor} ${describeChange(s, id, d.message, d.patch, d.change)}</h1>
<p class="meta">${personName(s, d.actor) ? personLink(s, d.actor) : (d.actor_name ?? d.actor)} · ${when(d.date)} · <code>${d.message.split('\n')[0]}</code> · change <code>${d.change}</code> · commit <code>${d.sha}</code>${d.internal ? ' · internal' : ''}</p>
<h2>Diff</h2>
<pre class="diff" tabindex="0" aria-label="Diff of this change">${lines.map((l) => {
    return html`<span class="${diffLineClass(l)}">${l || ' '}</span>`;
  })}</pre>`;
  return { html: layout({ title: `Change ${d.short} of ${id}`, viewer: s.viewer, flash: s.flash }, body) };
}
