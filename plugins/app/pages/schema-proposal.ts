/**
 * A schema or workflow proposal (issue 25 item 5): `/app/schema/proposals/{id}` shows the
 * node's reviewable content (its frontmatter without the server's stamps, and its body) as a
 * diff against its last active version from the node's history (against nothing for a schema
 * never active), a dry run of its hooks against nodes the author picks (the `dry_run_schema`
 * operation: the sandbox's verdict, CPU time and heap, nothing written), and approve / reject
 * for another person. Approving is `set_status` to active with the revision the page showed,
 * the path that enforces the self-approval ban: when the author tries, the ban's message
 * comes back on the page. Rejecting retires the proposal.
 */
import { createTwoFilesPatch } from 'diff';
import { stringify } from 'yaml';
import { STAMP_KEYS, parseNodeMarkdown } from '../../../kernel/codec.js';
import { errors, isSvcError, type SvcError } from '../../../kernel/errors.js';
import { csrfField, html, layout, type Html, diffLineClass } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { hookBlock, personName, schemaCrumbs } from './schema.js';

/** The server's stamps: not part of what a reviewer approves. */
const STAMPS = new Set([...STAMP_KEYS, 'created', 'updated', 'proposed_by', 'revision', 'status']);
/** history entries read looking for the last active version */
const HISTORY_LOOKUPS = 20;
/** nodes offered to the dry run's picker */
const PICKER_NODES = 200;

type DryRun = Awaited<ReturnType<Signed['bridge']['dryRunSchema']>>;

interface PageState {
  error?: SvcError | null;
  dryRun?: DryRun | null;
  picked?: string[];
  to?: string;
  status?: number;
}

/** A schema or workflow node as the reviewer reads it: frontmatter without stamps, then the body. */
export function reviewable(frontmatter: Record<string, unknown>, body: string): string {
  const fm = Object.fromEntries(Object.entries(frontmatter).filter(([k]) => !STAMPS.has(k)));
  return `${stringify(fm, { lineWidth: 0 })}---\n${body}`;
}

/** The node's content at its newest active version before now, from its history; null when it never was active. */
async function lastActive(s: Signed, id: string): Promise<{ text: string; sha: string } | null> {
  if (!s.bridge.has('history')) return null;
  const list = await s.bridge.getNodeHistory(id, HISTORY_LOOKUPS);
  for (const entry of list.history.slice(1)) {
    const detail = await s.bridge.getHistoryEntry(id, String(entry.sha));
    if (typeof detail.content !== 'string') continue;
    try {
      const parsed = parseNodeMarkdown(detail.content);
      if (parsed.frontmatter.status === 'active') return { text: reviewable(parsed.frontmatter, parsed.body), sha: String(entry.short) };
    } catch {
      // a version the codec no longer reads is no baseline
    }
  }
  return null;
}

function diffBlock(label: string, before: string, after: string): Html {
  const patch = createTwoFilesPatch(`${label} (active)`, `${label} (proposed)`, before, after, '', '', { context: 3 });
  const lines = patch.split('\n').filter((l) => !l.startsWith('====') && !l.startsWith('Index:'));
  return html`<pre class="diff" tabindex="0" role="region" aria-label="Changes against the active version">${lines.map((l) => {
    return html`<span class="${diffLineClass(l)}">${l || ' '}</span>`;
  })}</pre>`;
}

const fmt = (n: number | null, unit: string) => (n === null ? 'n/a' : `${n} ${unit}`);
const kib = (n: number | null) => (n === null ? 'n/a' : `${Math.round(n / 1024).toLocaleString('en')} KiB`);

/** The dry run's answer as a table: one row per node, hook and move. */
export function dryRunTable(run: DryRun): Html {
  const rows = run.results.flatMap((r) =>
    r.applies
      ? r.runs.map(
          (x) =>
            html`<tr><th scope="row"><a href="/app/nodes/${encodeURIComponent(r.node_id)}">${r.node_id}</a> <span class="muted small">${r.status}</span></th>
<td>${x.hook}${x.to ? html` → <code>${x.to}</code>` : ''}</td><td><span class="verdict ${x.verdict}">${x.verdict}</span>${x.reason ? html`<br><span class="small">${x.reason}</span>` : ''}</td>
<td>${fmt(x.cpu_ms, 'ms')}</td><td>${kib(x.heap_used_bytes)}</td></tr>`,
        )
      : [
          html`<tr><th scope="row">${r.node_id}</th><td colspan="4" class="muted">not run: the schema does not apply to ${r.type}</td></tr>`,
        ],
  );
  return html`<section aria-labelledby="dry-h" id="dry-run-result"><h2 id="dry-h">Dry run result</h2>
<p class="muted small">Ran in the sandbox under this tenant's limits (${run.limits.timeout_ms} ms of CPU per call, ${run.limits.memory_mb} MB heap); nothing was written.${run.skipped_hooks.length ? ` Not run (the kernel never calls them): ${run.skipped_hooks.join(', ')}.` : ''}</p>
<div class="table-wrap" tabindex="0" role="region" aria-label="Verdict, CPU time and heap per node and hook"><table class="dry-run"><caption class="sr-only">Verdict, CPU time and heap per node and hook</caption>
<thead><tr><th scope="col">Node</th><th scope="col">Hook</th><th scope="col">Verdict</th><th scope="col">CPU</th><th scope="col">Heap in use</th></tr></thead>
<tbody>${rows}</tbody></table></div></section>`;
}

/** Nodes of the types a schema applies to, for the dry run's picker. */
export function pickableNodes(s: Signed, types: string[]): Array<{ id: string; title: string; status: string }> {
  const index = s.bridge.tenant.index;
  const out: Array<{ id: string; title: string; status: string }> = [];
  for (const type of types)
    for (const id of index.idsOfType(type)) out.push({ id, title: index.get(id)!.title, status: index.get(id)!.status });
  return out.sort((a, b) => a.title.localeCompare(b.title)).slice(0, PICKER_NODES);
}

async function proposalPage(s: Signed, id: string, state: PageState = {}): Promise<AppResult> {
  const record = s.bridge.tenant.index.get(id);
  if (!record || (record.type !== 'schema' && record.type !== 'wf')) throw errors.notFound(`schema or workflow node ${id}`);
  const node = await s.bridge.getNode(id);
  const fm = node.frontmatter as Record<string, unknown>;
  const current = reviewable(fm, String(node.body ?? ''));
  const base = await lastActive(s, id);
  const kind = record.type === 'wf' ? 'workflow' : 'schema';
  const author = typeof fm.author === 'string' ? fm.author : null;
  const mine = author === s.viewer.personId;
  const csrf = csrfField(s.viewer.csrf);
  const revision = String(node.revision);
  const appliesTo = Array.isArray(fm.applies_to) ? fm.applies_to.map(String) : typeof fm.applies_to === 'string' ? [fm.applies_to] : [];
  const hooks =
    fm.hooks && typeof fm.hooks === 'object'
      ? Object.entries(fm.hooks as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string')
      : [];
  const statuses = [...new Set(appliesTo.flatMap((t) => s.bridge.tenant.registry.nodeTypes.get(t)?.statuses ?? []))];
  const picked = new Set(state.picked ?? []);
  const error = state.error
    ? html`<p class="flash error" role="alert">${state.error.message}${state.error.code === 'conflict' ? ' Reload the page to see the current version.' : ''}</p>`
    : '';
  const decide =
    record.status === 'proposed'
      ? html`<section aria-labelledby="decide-h"><h2 id="decide-h">Approve or reject</h2>
${mine ? html`<p class="muted">You are the last author of this version: another person must approve it (self-approval ban).</p>` : html`<p class="muted">Approving makes it live at once for every write of ${appliesTo.join(', ') || 'its types'}.</p>`}
<div class="actions"><form method="post" action="/app/schema/proposals/${encodeURIComponent(id)}/approve">${csrf}<input type="hidden" name="revision" value="${revision}"><button type="submit">Approve</button></form>
<form method="post" action="/app/schema/proposals/${encodeURIComponent(id)}/reject">${csrf}<input type="hidden" name="revision" value="${revision}"><button type="submit" class="secondary">Reject</button></form></div></section>`
      : html`<p class="muted">This ${kind} is <strong>${record.status}</strong>.</p>`;
  const nodes = record.type === 'schema' ? pickableNodes(s, appliesTo) : [];
  const dryForm =
    record.type === 'schema'
      ? html`<section aria-labelledby="try-h"><h2 id="try-h">Dry run</h2>
<p class="muted small">Runs this version's hooks in the sandbox against the nodes you pick, as a write would; nothing is written.</p>
<form method="post" action="/app/schema/proposals/${encodeURIComponent(id)}/dry-run" class="stack">${csrf}
<label for="dry-nodes">Nodes (up to 10; Ctrl or Shift to pick several)</label>
<select id="dry-nodes" name="node" multiple size="${Math.min(8, Math.max(3, nodes.length))}" required>${nodes.map((n) => html`<option value="${n.id}"${picked.has(n.id) ? html` selected` : ''}>${n.title} (${n.status})</option>`)}</select>
<label for="dry-to">Transition to</label>
<select id="dry-to" name="to"><option value="">every legal move</option>${statuses.map((st) => html`<option value="${st}"${state.to === st ? html` selected` : ''}>${st}</option>`)}</select>
<button type="submit">Dry run</button></form></section>
${state.dryRun ? dryRunTable(state.dryRun) : ''}`
      : '';
  const body = html`${schemaCrumbs(['Proposals', null], [id, null])}
<h1>${record.title}</h1>
<p class="meta">${kind} <code>${id}</code> · ${record.status} · last author ${personName(s, author)}${appliesTo.length ? html` · applies to ${appliesTo.map((t, i) => html`${i ? ', ' : ''}<a href="/app/schema/${encodeURIComponent(t)}">${t}</a>`)}` : ''}</p>
${error}
${decide}
<section aria-labelledby="diff-h"><h2 id="diff-h">Changes</h2>
<p class="muted small">${base ? html`Against the last active version (<code>${base.sha}</code>).` : html`Never active before: everything is new.`}</p>
${diffBlock(id, base?.text ?? '', current)}
${record.type === 'schema' ? html`<p><a href="/app/schema/editor?id=${encodeURIComponent(id)}">Change the hooks in the editor</a></p>` : ''}</section>
${dryForm}
${hooks.length ? html`<section aria-labelledby="code-h"><h2 id="code-h">Hook code</h2>${hooks.map(([name, src]) => hookBlock(name, src, id))}</section>` : ''}`;
  return {
    status: state.status ?? 200,
    html: layout({ title: `${record.title} · Schema proposal`, viewer: s.viewer, nav: 'schema', flash: s.flash }, body),
  };
}

/** GET /app/schema/proposals/:id */
export const showProposal = (req: AppRequest, s: Signed): Promise<AppResult> => proposalPage(s, req.params.id!);

/** POST /app/schema/proposals/:id/dry-run: the picked nodes, the move; the result on the page. */
export async function dryRunProposal(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const picked = req.form.getAll('node').filter(Boolean);
  const to = req.form.get('to') ?? '';
  try {
    const run = await s.bridge.dryRunSchema({ schema_id: id, node_ids: picked, ...(to ? { to } : {}) });
    return proposalPage(s, id, { dryRun: run, picked, to });
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500 || err.status === 404) throw err;
    return proposalPage(s, id, { error: err, picked, to, status: err.status });
  }
}

/** POST approve / reject: set_status with the page's revision; the self-approval ban's refusal comes back on the page. */
function decide(status: 'active' | 'retired', done: (id: string) => string) {
  return async (req: AppRequest, s: Signed): Promise<AppResult> => {
    const id = req.params.id!;
    const revision = req.form.get('revision') ?? undefined;
    try {
      await s.bridge.setStatus(id, status, revision || undefined);
    } catch (err) {
      if (!isSvcError(err) || err.status >= 500 || err.status === 404) throw err;
      return proposalPage(s, id, { error: err, status: err.status });
    }
    s.setFlash('ok', done(id));
    return { redirect: `/app/schema/proposals/${encodeURIComponent(id)}` };
  };
}

export const approveProposal = decide('active', (id) => `Approved ${id}: it is live now`);
export const rejectProposal = decide('retired', (id) => `Rejected ${id}: it is retired`);
