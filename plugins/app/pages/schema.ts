/**
 * The schema registry as pages for schema authors (issue 25 item 5): `/app/schema` lists the
 * node types (statuses, source, the graph schema that shapes each), the edge types with their
 * inverse labels and aliases, and the schema and workflow proposals waiting for approval;
 * `/app/schema/{type}` shows one type: its fields, statuses with the legal moves, and every
 * hook that governs it with its code (seed first, then graph layers, the order the kernel runs
 * them in). The registry comes from the `schema` operation (GET /v1/schema with `code=1`);
 * the field rules, which that answer leaves out, from the tenant's live registry.
 */
import { errors } from '../../../kernel/errors.js';
import { html, layout, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';

interface TypeEntry {
  type: string;
  description: string;
  prefix: string;
  source: string;
  schema_id: string;
  statuses: string[];
  terminal_statuses: string[];
  initial_status: string;
  transitions: Record<string, string[]>;
  self_approval_ban: boolean;
  hooks: string[];
  code?: Record<string, string>;
}

interface EdgeEntry {
  type: string;
  description: string;
  weight: number;
  inverse_label: string;
  aliases: string[];
  inverse_aliases: string[];
  source: string;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

function typeEntry(raw: Record<string, unknown>): TypeEntry {
  const code = raw.code && typeof raw.code === 'object' ? (raw.code as Record<string, string>) : undefined;
  return {
    type: String(raw.type),
    description: String(raw.description ?? ''),
    prefix: String(raw.prefix ?? ''),
    source: String(raw.source ?? ''),
    schema_id: String(raw.schema_id ?? ''),
    statuses: strings(raw.statuses),
    terminal_statuses: strings(raw.terminal_statuses),
    initial_status: String(raw.initial_status ?? ''),
    transitions: (raw.transitions && typeof raw.transitions === 'object' ? raw.transitions : {}) as Record<string, string[]>,
    self_approval_ban: raw.self_approval_ban === true,
    hooks: strings(raw.hooks),
    ...(code ? { code } : {}),
  };
}

function edgeEntry(raw: Record<string, unknown>): EdgeEntry {
  return {
    type: String(raw.type),
    description: String(raw.description ?? ''),
    weight: Number(raw.weight ?? 0),
    inverse_label: String(raw.inverse_label ?? ''),
    aliases: strings(raw.aliases),
    inverse_aliases: strings(raw.inverse_aliases),
    source: String(raw.source ?? ''),
  };
}

/** The crumbs above every schema page. */
export function schemaCrumbs(...trail: Array<[string, string | null]>): Html {
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/schema">Schema</a>${trail.map(([label, href]) => (href ? html` › <a href="${href}">${label}</a>` : html` › <span>${label}</span>`))}</nav>`;
}

/** A person's name for a node id (the schema pages show names, not ids). */
export function personName(s: Signed, id: unknown): string {
  if (typeof id !== 'string' || !id) return 'unknown';
  if (id === s.viewer.personId) return 'you';
  return s.bridge.tenant.index.get(id)?.title ?? id;
}

/** Schema and workflow nodes waiting for another person's approval. */
function proposals(s: Signed): Html {
  const index = s.bridge.tenant.index;
  const waiting = [...index.idsOfType('schema'), ...index.idsOfType('wf')]
    .map((id) => index.get(id)!)
    .filter((r) => r.status === 'proposed')
    .sort((a, b) => a.id.localeCompare(b.id));
  const rows = waiting.map(
    (r) =>
      html`<li><a href="/app/schema/proposals/${encodeURIComponent(r.id)}">${r.title}</a> <span class="muted small">${r.type === 'wf' ? 'workflow' : 'schema'} · proposed by ${personName(s, r.frontmatter.author)}</span></li>`,
  );
  return html`<section aria-labelledby="proposals-h"><h2 id="proposals-h">Proposals waiting for approval (${waiting.length})</h2>
${rows.length ? html`<ul class="plain">${rows}</ul>` : html`<p class="muted">No schema or workflow is waiting for approval.</p>`}
<p><a class="button" href="/app/schema/editor">Write a new schema</a></p></section>`;
}

/** GET /app/schema: node types, edge types, proposals. */
export async function showSchema(_req: AppRequest, s: Signed): Promise<AppResult> {
  const reg = await s.bridge.schema(false);
  const types = reg.node_types.map(typeEntry);
  const edges = reg.edge_types.map(edgeEntry);
  const body = html`<h1>Schema</h1>
<p class="muted">The live registry of this tenant: the built-in pack, plugin types and the active schema nodes of the graph. A change is proposed as a schema node and goes live when another person approves it.</p>
${proposals(s)}
<section aria-labelledby="types-h"><h2 id="types-h">Node types (${types.length})</h2>
<div class="table-wrap" tabindex="0" role="region" aria-label="Node types"><table><caption class="sr-only">Node types</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Prefix</th><th scope="col">Statuses</th><th scope="col">Hooks</th><th scope="col">Source</th></tr></thead>
<tbody>${types.map(
    (t) =>
      html`<tr><th scope="row"><a href="/app/schema/${encodeURIComponent(t.type)}">${t.type}</a><br><span class="muted small">${t.description}</span></th>
<td><code>${t.prefix}</code></td><td>${t.statuses.join(', ')}</td><td>${t.hooks.length}</td>
<td>${t.source}${t.source === 'graph' ? html`<br><a class="small" href="/app/nodes/${encodeURIComponent(t.schema_id)}">${t.schema_id}</a>` : ''}</td></tr>`,
  )}</tbody></table></div></section>
<section aria-labelledby="edges-h"><h2 id="edges-h">Edge types (${edges.length})</h2>
<div class="table-wrap" tabindex="0" role="region" aria-label="Edge types with their inverse labels and aliases"><table><caption class="sr-only">Edge types with their inverse labels and aliases</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Inverse</th><th scope="col">Aliases</th><th scope="col">Weight</th><th scope="col">Source</th></tr></thead>
<tbody>${edges.map(
    (e) =>
      html`<tr id="edge-${e.type}"><th scope="row"><code>${e.type}</code><br><span class="muted small">${e.description}</span></th>
<td><code>${e.inverse_label}</code></td>
<td>${e.aliases.length ? e.aliases.map((a, i) => html`${i ? ', ' : ''}<code>${a}</code>${e.inverse_aliases.includes(a) ? html` <span class="muted small">(= ${e.inverse_label})</span>` : ''}`) : html`<span class="muted">none</span>`}</td>
<td>${e.weight}</td><td>${e.source}</td></tr>`,
  )}</tbody></table></div></section>`;
  return { html: layout({ title: 'Schema', viewer: s.viewer, nav: 'schema', flash: s.flash }, body) };
}

/** One hook's code, read-only, with where it comes from. */
export function hookBlock(name: string, source: string, owner: string): Html {
  const graph = owner !== 'seed' && owner !== 'native';
  return html`<figure class="hook"><figcaption><strong>${name}</strong> · ${graph ? html`from <a href="/app/schema/proposals/${encodeURIComponent(owner)}">${owner}</a>` : html`built-in (${owner})`}</figcaption>
<pre class="code" tabindex="0" role="region" aria-label="Code of the ${name} hook of ${owner}"><code>${source}</code></pre></figure>`;
}

/** GET /app/schema/:type: one type's fields, statuses and moves, and its hooks with their code. */
export async function showSchemaType(req: AppRequest, s: Signed): Promise<AppResult> {
  const name = req.params.type!;
  const reg = await s.bridge.schema(true);
  const raw = reg.node_types.find((t) => t.type === name);
  if (!raw) throw errors.notFound(`node type ${name}`);
  const t = typeEntry(raw);
  const fields = s.bridge.tenant.registry.nodeTypes.get(name)?.fields ?? [];
  const hooks = Object.entries(t.code ?? {}).map(([key, source]) => {
    // graph hooks are keyed `<schema id>:<hook>`, built-in ones by the hook name
    const at = key.lastIndexOf(':');
    return at > 0
      ? { name: key.slice(at + 1), owner: key.slice(0, at), source }
      : { name: key, owner: t.source === 'native' ? 'native' : 'seed', source };
  });
  const statusLabel = (st: string) =>
    html`<code>${st}</code>${st === t.initial_status ? html` <span class="muted small">(initial)</span>` : ''}${t.terminal_statuses.includes(st) ? html` <span class="muted small">(final)</span>` : ''}`;
  const body = html`${schemaCrumbs([t.type, null])}
<h1>Type: ${t.type}</h1>
<p>${t.description}</p>
<dl class="fields"><dt>Id prefix</dt><dd><code>${t.prefix}</code></dd><dt>Source</dt><dd>${t.source}${t.source === 'graph' ? html` (<a href="/app/schema/proposals/${encodeURIComponent(t.schema_id)}">${t.schema_id}</a>)` : ''}</dd>
<dt>Approval</dt><dd>${t.self_approval_ban ? 'activation needs a person other than the author (self-approval ban)' : 'no approval step'}</dd></dl>
<section aria-labelledby="fields-h"><h2 id="fields-h">Fields</h2>
<p class="muted small">Every node has <code>id</code>, <code>type</code>, <code>status</code> and <code>summary</code>; <code>title</code>, <code>project</code>, <code>priority</code> and <code>edges</code> are optional.</p>
${
  fields.length
    ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Fields of ${t.type}"><table><caption class="sr-only">Fields of ${t.type}</caption><thead><tr><th scope="col">Field</th><th scope="col">Kind</th><th scope="col">Required</th></tr></thead>
<tbody>${fields.map((f) => html`<tr><th scope="row"><code>${f.field}</code></th><td>${f.kind}${f.names ? html` (${f.names.join(', ')})` : ''}</td><td>${f.required ? 'required' : 'optional'}</td></tr>`)}</tbody></table></div>`
    : html`<p class="muted">No fields of its own.</p>`
}</section>
<section aria-labelledby="moves-h"><h2 id="moves-h">Statuses and legal moves</h2>
<div class="table-wrap" tabindex="0" role="region" aria-label="Legal moves between the statuses of ${t.type}"><table><caption class="sr-only">Legal moves between the statuses of ${t.type}</caption><thead><tr><th scope="col">From</th><th scope="col">May move to</th></tr></thead>
<tbody>${t.statuses.map((st) => html`<tr><th scope="row">${statusLabel(st)}</th><td>${(t.transitions[st] ?? []).length ? (t.transitions[st] ?? []).map((to, i) => html`${i ? ', ' : ''}<code>${to}</code>`) : html`<span class="muted">nothing (final)</span>`}</td></tr>`)}</tbody></table></div></section>
<section aria-labelledby="hooks-h"><h2 id="hooks-h">Hooks (${hooks.length})</h2>
<p class="muted small">They run in the sandbox in this order on every write of a ${t.type}; the first denial wins.</p>
${hooks.map((h) => hookBlock(h.name, h.source, h.owner))}
<p><a class="button" href="/app/schema/editor?applies_to=${encodeURIComponent(t.type)}">Propose a hook for ${t.type}</a></p></section>`;
  return { html: layout({ title: `Type ${t.type} · Schema`, viewer: s.viewer, nav: 'schema', flash: s.flash }, body) };
}
