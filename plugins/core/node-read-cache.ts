/**
 * The node read (GET /v1/nodes/{id} and its twin `get_node`) with a response cache.
 *
 * The node read (`readNode` -> `nodeView`) is a pure function of the tenant's graph index
 * and registry, so its serialized bytes stay valid until the next commit (which moves
 * `index.head`) or registry rebuild. This adapter keeps, per tenant, the `serialize()`d
 * payload of each node read since the last commit and answers repeated reads with those
 * bytes: both adapters answer exactly `serialize(readNode(...))` (the MCP adapter takes a
 * RawResponse's body as the tool text), but a hot node costs a Map
 * lookup instead of building and stringifying its view (measured: about a third of the
 * per-request CPU; docs/performance.md).
 *
 * If node reads ever gain keys that come from outside the graph (operational state such as
 * leases), this cache must key on that state too, or be dropped.
 */
import type { Static } from '../../kernel/operation.js';
import { RawResponse, serialize, type OpContext } from '../../kernel/plugin.js';
import type { Registry } from '../../kernel/registry.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { GetNodeInput } from './api.js';
import { readNode } from './operations.js';

/** Body text kept per tenant between commits (UTF-16 code units; a full clear when reached). */
const MAX_CHARS = 8 * 1024 * 1024;
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

interface TenantReadCache {
  head: string | null;
  registry: Registry;
  /** raw id -> the answer (RawResponse is immutable, so one instance serves every hit) */
  answers: Map<string, RawResponse>;
  chars: number;
}

const caches = new WeakMap<Tenant, TenantReadCache>();

/**
 * `include_markdown` (the raw file beside frontmatter + body, the same content twice): REST
 * answers it unless `include_markdown=false`, a tool only when asked; each adapter sends the
 * same bytes as the other for the same explicit flag (docs/decisions.md, "tools").
 */
function wantsMarkdown(ctx: OpContext, input: Static<typeof GetNodeInput>): boolean {
  return input.include_markdown ?? ctx.via === 'rest';
}

/** get_node: the node's view, served from the cache while the graph has not moved. */
export async function getNode(ctx: OpContext, input: Static<typeof GetNodeInput>): Promise<RawResponse> {
  const { tenant } = ctx;
  let cache = caches.get(tenant);
  if (!cache || cache.head !== tenant.index.head || cache.registry !== tenant.registry) {
    cache = { head: tenant.index.head, registry: tenant.registry, answers: new Map(), chars: 0 };
    caches.set(tenant, cache);
  }
  const withMarkdown = wantsMarkdown(ctx, input);
  const key = withMarkdown ? String(input.id) : `${String(input.id)}\u0000lean`;
  let answer = cache.answers.get(key);
  if (answer === undefined) {
    const view = await readNode(ctx, input); // 404 / 422 throw as before, uncached
    let body: string;
    if (withMarkdown) body = serialize(view);
    else {
      const { markdown: _markdown, ...lean } = view;
      body = serialize(lean);
    }
    answer = new RawResponse(200, JSON_TYPE, body);
    // the view was built from the state the cache is keyed on only if nothing committed meanwhile
    if (cache.head === tenant.index.head && cache.registry === tenant.registry) {
      if (cache.chars + body.length > MAX_CHARS) {
        cache.answers.clear();
        cache.chars = 0;
      }
      cache.answers.set(key, answer);
      cache.chars += body.length;
    }
  }
  return answer;
}
