/**
 * Full-text scoring for the digest, query_graph and explore_graph: one minisearch index per
 * tenant over every node's title, summary, body and id words, built once (on first use) from
 * the in-memory graph index and kept in step with it through its commit events, never
 * rebuilt per request.
 *
 * Ranking is minisearch's BM25 score (title and summary boosted). `sim`, the number a
 * `min_sim` threshold compares against, is the share of the query's distinct terms the node
 * matches: an exact term counts 1, a prefix or fuzzy match 0.7. It lies in [0, 1] and does
 * not depend on the rest of the corpus, so a threshold means the same on any graph.
 */
import MiniSearch, { type SearchResult } from 'minisearch';
import type { CommitEvent, NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { perTenant } from '../../kernel/per-tenant.js';

interface SearchDoc {
  id: string;
  title: string;
  summary: string;
  body: string;
  words: string;
}

export interface SearchHit {
  id: string;
  score: number;
  sim: number;
}

const STOP_WORDS = new Set(
  (
    'a an and are as at be but by can do does for from had has have how i if in into is it its me my no not of on or our so that the their ' +
    'then there these they this to was we were what when where which who why will with you your'
  ).split(' '),
);

const NON_EXACT_WEIGHT = 0.7;

function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  if (t.length < 2 || STOP_WORDS.has(t)) return null;
  return t;
}

const SPLIT = /[\s\p{P}\p{S}]+/u;

/** The distinct terms of a query, as the index sees them. */
export function queryTerms(query: string): string[] {
  const out = new Set<string>();
  for (const raw of query.split(SPLIT)) {
    const t = raw ? processTerm(raw) : null;
    if (t) out.add(t);
  }
  return [...out];
}

function docOf(r: NodeRecord): SearchDoc {
  return {
    id: r.id,
    title: r.title,
    summary: typeof r.frontmatter.summary === 'string' ? r.frontmatter.summary : '',
    body: r.body,
    words: `${r.id.replace(/-/g, ' ')} ${r.project ?? ''}`,
  };
}

export class GraphSearch {
  private engine!: MiniSearch<SearchDoc>;
  private stale = true;

  constructor(private readonly tenant: Tenant) {
    // Subscribed before the first build: events that arrive before it only mark nothing,
    // because the build reads the index as it is at that moment.
    tenant.index.subscribe((event) => this.apply(event));
  }

  private build(): void {
    this.engine = new MiniSearch<SearchDoc>({
      fields: ['title', 'summary', 'body', 'words'],
      storeFields: [],
      tokenize: (text) => text.split(SPLIT),
      processTerm: (term) => processTerm(term),
    });
    // O(nodes), once per tenant (and after a failed incremental update), never per request.
    this.engine.addAll([...this.tenant.index.nodes.values()].map(docOf));
    this.stale = false;
  }

  private apply(event: CommitEvent): void {
    if (this.stale) return;
    try {
      for (const change of event.changes) {
        if (this.engine.has(change.id)) this.engine.discard(change.id);
        if (change.after) this.engine.add(docOf(change.after));
      }
    } catch {
      // A listener never throws into the write path; the next search rebuilds instead.
      this.stale = true;
    }
  }

  /** Hits with `sim >= minSim` that pass `keep`, best BM25 score first (ties by id). */
  search(query: string, keep: (id: string) => boolean, minSim: number): { hits: SearchHit[]; topSim: number } {
    if (this.stale) this.build();
    const terms = queryTerms(query);
    if (terms.length === 0) return { hits: [], topSim: 0 };
    const results: SearchResult[] = this.engine.search(terms.join(' '), {
      boost: { title: 3, summary: 2, words: 1.5, body: 1 },
      prefix: (term) => term.length >= 4,
      fuzzy: (term) => (term.length >= 6 ? 0.2 : false),
      combineWith: 'OR',
      filter: (r) => keep(String(r.id)),
    });
    let topSim = 0;
    const hits: SearchHit[] = [];
    for (const r of results) {
      let matched = 0;
      for (const q of new Set(r.queryTerms)) matched += r.match[q] ? 1 : NON_EXACT_WEIGHT;
      const sim = Math.round((Math.min(matched, terms.length) / terms.length) * 1000) / 1000;
      topSim = Math.max(topSim, sim);
      if (sim >= minSim) hits.push({ id: String(r.id), score: r.score, sim });
    }
    hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { hits, topSim };
  }
}

export const searchOf: (tenant: Tenant) => GraphSearch = perTenant((tenant) => new GraphSearch(tenant));
