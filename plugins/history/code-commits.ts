/**
 * Code-commit links (`commits: [repo@sha]` in node frontmatter) indexed by the first seven
 * hex digits of the sha, so GET /v1/commits/{sha} is a bucket lookup. Built from the graph
 * index when the tenant opens and kept in step with its commit events.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { perTenant } from '../../kernel/per-tenant.js';

export interface CodeLink {
  id: string;
  repo: string;
  sha: string;
}

const LINK = /^([a-z0-9][a-z0-9-]*)@([0-9a-f]{7,40})$/;

function linksOf(record: NodeRecord | null): CodeLink[] {
  const raw = record?.frontmatter.commits;
  if (!record || !Array.isArray(raw)) return [];
  const out: CodeLink[] = [];
  for (const entry of raw) {
    const m = typeof entry === 'string' ? LINK.exec(entry) : null;
    if (m) out.push({ id: record.id, repo: m[1]!, sha: m[2]! });
  }
  return out;
}

export class CodeCommitIndex {
  private readonly buckets = new Map<string, CodeLink[]>();
  private readonly unsubscribe: () => void;

  constructor(tenant: Tenant) {
    for (const record of tenant.index.nodes.values()) this.addAll(linksOf(record));
    this.unsubscribe = tenant.index.subscribe((event) => {
      for (const change of event.changes) {
        this.removeNode(change.id, linksOf(change.before));
        this.addAll(linksOf(change.after));
      }
    });
  }

  private addAll(links: CodeLink[]): void {
    for (const link of links) {
      const key = link.sha.slice(0, 7);
      const bucket = this.buckets.get(key);
      if (bucket) bucket.push(link);
      else this.buckets.set(key, [link]);
    }
  }

  private removeNode(id: string, links: CodeLink[]): void {
    for (const key of new Set(links.map((l) => l.sha.slice(0, 7)))) {
      const bucket = this.buckets.get(key);
      if (!bucket) continue;
      const kept = bucket.filter((l) => l.id !== id);
      if (kept.length) this.buckets.set(key, kept);
      else this.buckets.delete(key);
    }
  }

  /** Links whose sha and the query agree on their common length (either may be abbreviated). */
  lookup(sha: string): CodeLink[] {
    const bucket = this.buckets.get(sha.slice(0, 7)) ?? [];
    return bucket.filter((l) => l.sha.startsWith(sha) || sha.startsWith(l.sha));
  }

  close(): void {
    this.unsubscribe();
  }
}

export const codeCommitIndexOf: (tenant: Tenant) => CodeCommitIndex = perTenant((tenant) => new CodeCommitIndex(tenant));
