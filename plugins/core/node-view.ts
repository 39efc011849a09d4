/**
 * The node read of GET /v1/nodes/{id}: raw markdown, frontmatter, body and revision, plus
 * the schema-attached keys (`resolution`, `open_findings`, `superseded_by`) when they apply.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';

export function nodeView(tenant: Tenant, record: NodeRecord): Record<string, unknown> {
  const view: Record<string, unknown> = {
    id: record.id,
    type: record.type,
    markdown: record.markdown,
    frontmatter: record.frontmatter,
    body: record.body,
    revision: record.revision,
  };
  const { index, registry } = tenant;
  const resolvers = index.inboundOf(record.id, ['resolves', 'answers']).filter((e) => {
    const from = index.get(e.from);
    return from !== undefined && !registry.nodeTypes.get(from.type)?.non_resolving;
  });
  if (resolvers.length > 0) {
    const first = resolvers[0]!;
    const by = index.get(first.from)!;
    view.resolution = {
      by: by.id,
      edge: first.edge.type,
      title: by.title,
      summary: String(by.frontmatter.summary ?? ''),
      status: by.status,
      lagging: !registry.isTerminal(record.type, record.status),
      ...(resolvers.length > 1 ? { also: resolvers.slice(1).map((r) => r.from) } : {}),
    };
  }
  const findings = index
    .inboundOf(record.id, ['concerns'])
    .map((e) => index.get(e.from))
    .filter((f): f is NodeRecord => f !== undefined && f.type === 'finding' && f.status === 'open')
    .map((f) => ({ id: f.id, check: f.frontmatter.check ?? null, summary: String(f.frontmatter.summary ?? '') }));
  if (findings.length > 0) view.open_findings = findings;
  const superseders = index.inboundOf(record.id, ['supersedes']).filter((e) => index.has(e.from));
  if (superseders.length > 0) {
    const by = index.get(superseders[0]!.from)!;
    view.superseded_by = { id: by.id, title: by.title, status: by.status };
  }
  return view;
}

/** Done for progress and queue purposes: terminal, superseded, or resolved by a live edge. */
export function isDone(tenant: Tenant, record: NodeRecord): boolean {
  const { index, registry } = tenant;
  if (registry.isTerminal(record.type, record.status)) return true;
  if (!index.hasInbound(record.id)) return false;
  if (index.inboundOf(record.id, ['supersedes']).some((e) => index.has(e.from))) return true;
  return index.inboundOf(record.id, ['resolves', 'answers']).some((e) => {
    const from = index.get(e.from);
    return from !== undefined && !registry.nodeTypes.get(from.type)?.non_resolving;
  });
}
