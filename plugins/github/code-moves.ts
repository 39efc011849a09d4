/**
 * How code moves work (docs/github.md "Pull requests and commits"): the writes the
 * pull_request, pull_request_review and push handlers share. Every one goes through core's own
 * operations (`invoke` of plugins/core/api.ts: set_status's transition gate, add_edge,
 * link_commit, patch_node, put_node), acting as the person the GitHub login maps to (`ctx.as`),
 * so the rules a member's change meets (transition hooks, leases, limits) hold here too.
 *
 * Every write is idempotent (an edge or commit already there, a status already reached, is
 * skipped), so a delivery retried after a partial run converges instead of doubling anything.
 * A refusal that retrying cannot change (the transition gate, a strict lease held by someone
 * else) is logged and the delivery goes on: the link, the commit and the `resolves` edge stand
 * as the record, and the gardener's lagging-resolution check shows a node whose status did not
 * follow.
 */
import { isSvcError } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import { invoke } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { LIMITS } from '../../kernel/registry.js';
import { addEdge, linkCommit, patchNode, putNode, removeEdge, setStatus } from '../core/api.js';
import type { InboundContext } from './handlers/index.js';
import { findRefsIn, type NodeRef } from './refs.js';

// ---------------------------------------------------------------- reading payloads

type Json = Record<string, unknown>;

/** The object at `value`, or an empty one: payloads are GitHub's, read defensively (a missing field is "absent", never a crash). */
export function obj(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

export function str(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The login of a GitHub user object (`{login}`), null when absent. */
export function loginOf(user: unknown): string | null {
  return str(obj(user).login);
}

// ---------------------------------------------------------------- names

/** Lower-case kebab-case, as node ids and repo slugs are written. */
export function slugOf(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/, '');
}

/**
 * The repository slug commits are linked under (`<slug>@<sha>`, link_commit) and the repo node
 * `repo-<slug>`: the repository's name in kebab-case (`Codertocat/Hello-World` -> `hello-world`),
 * the name a team calls it by.
 */
export function repoSlugOf(ctx: Pick<InboundContext, 'link'>): string {
  const name = ctx.link.repo.split('/').pop() ?? ctx.link.repo;
  return slugOf(name) || 'repo';
}

/**
 * The references of texts that name nodes of this tenant: an id that names no node, a
 * person, or the wrong kind of node for work (a repo, a project) is dropped without error.
 */
export function referencedNodes(ctx: InboundContext, ...texts: Array<string | null | undefined>): Array<NodeRef & { record: NodeRecord }> {
  const out: Array<NodeRef & { record: NodeRecord }> = [];
  for (const ref of findRefsIn(...texts)) {
    const record = ctx.tenant.index.get(ref.id);
    if (!record || NOT_WORK.has(record.type)) continue;
    out.push({ ...ref, record });
  }
  return out;
}

/** Node types a pull request or commit does not move or link: identity, structure and configuration. */
const NOT_WORK = new Set(['person', 'agent', 'proj', 'repo', 'profile', 'lens', 'schema', 'correction', 'comment']);

// ---------------------------------------------------------------- writes

/**
 * Runs one idempotent write; a refusal that no retry can change (409 transition_denied,
 * lease_held, a 403 or 422) is logged and answered false, anything else (an outage, a stale
 * revision) is thrown so the delivery is retried.
 */
async function attempt(ctx: InboundContext, what: string, write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (isSvcError(err) && (err.code === 'transition_denied' || err.code === 'lease_held' || err.status === 403 || err.status === 422)) {
      ctx.log.warn('github: a change from GitHub was refused', {
        org: ctx.tenant.org,
        delivery: ctx.delivery,
        what,
        code: err.code,
        reason: err.message,
      });
      return false;
    }
    throw err;
  }
}

/** The status `record` is in now (the index is read after each write: a retry sees what landed). */
function current(ctx: InboundContext, id: string): NodeRecord | undefined {
  return ctx.tenant.index.get(id);
}

/** Moves a node through set_status's transition gate; skipped when it is there already. Answers whether it is there now. */
export async function moveTo(ctx: InboundContext, as: OpContext, id: string, status: string): Promise<boolean> {
  const record = current(ctx, id);
  if (!record) return false;
  if (record.status === status) return true;
  return attempt(ctx, `set_status ${id} ${status}`, () => invoke(setStatus, as, { id, status }));
}

/** The review status of a type, when it has one (task and spec in the seed pack; issue has none). */
export function reviewStatusOf(ctx: InboundContext, type: string): string | null {
  const def = ctx.tenant.registry.nodeTypes.get(type);
  return def && def.statuses.includes('review') ? 'review' : null;
}

export function isTerminal(ctx: InboundContext, record: NodeRecord): boolean {
  return ctx.tenant.registry.isTerminal(record.type, record.status);
}

/** Most pull request links a node keeps (the newest stay). */
export const MAX_PULL_REQUESTS = 20;

/** Adds a pull request's address to the node's `pull_requests` list (a patch at the revision just read; skipped when present). */
export async function linkPullRequest(ctx: InboundContext, as: OpContext, id: string, url: string): Promise<void> {
  const record = current(ctx, id);
  if (!record) return;
  const known = list(record.frontmatter.pull_requests).filter((u): u is string => typeof u === 'string');
  if (known.includes(url)) return;
  const next = [...known, url].slice(-MAX_PULL_REQUESTS);
  await attempt(ctx, `link ${url} to ${id}`, () => invoke(patchNode, as, { id, revision: record.revision, set: { pull_requests: next } }));
}

/** Links a commit to a node (link_commit; skipped when linked). A node already holding 40 commits keeps them and the delivery goes on. */
export async function linkCommitTo(ctx: InboundContext, as: OpContext, id: string, sha: string): Promise<void> {
  if (!/^[0-9a-f]{7,40}$/.test(sha)) return;
  await attempt(ctx, `link commit ${sha} to ${id}`, () => invoke(linkCommit, as, { id, repo: repoSlugOf(ctx), sha }));
}

/** Writes a review-family edge from the node to a person (add_edge: the family's sibling to the same person is replaced). */
export async function reviewEdge(ctx: InboundContext, as: OpContext, id: string, type: string, person: string): Promise<void> {
  await attempt(ctx, `${type} ${id} -> ${person}`, () => invoke(addEdge, as, { id, type, to: person }));
}

export async function dropEdge(ctx: InboundContext, as: OpContext, id: string, type: string, to: string): Promise<void> {
  const record = current(ctx, id);
  if (!record?.edges.some((e) => e.type === type && e.to === to)) return;
  await attempt(ctx, `remove ${type} ${id} -> ${to}`, () => invoke(removeEdge, as, { id, type, to }));
}

/**
 * The repository's node `repo-<slug>`, the resolver of what its merged code closes: created on
 * first need (a member of the link's project grouping when it names one), never rewritten.
 */
export async function ensureRepoNode(ctx: InboundContext, as: OpContext): Promise<string | null> {
  const id = `repo-${repoSlugOf(ctx)}`;
  const existing = current(ctx, id);
  if (existing) return existing.type === 'repo' ? id : null;
  const project = ctx.link.project;
  const node = {
    id,
    type: 'repo',
    status: 'active',
    summary: `GitHub repository ${ctx.link.repo}`,
    aliases: [repoSlugOf(ctx)],
    ...(project && project.startsWith('proj-') && ctx.tenant.index.has(project) ? { edges: [{ type: 'member-of', to: project }] } : {}),
    body: `https://github.com/${ctx.link.repo}\n`,
  };
  await attempt(ctx, `create ${id}`, () => invoke(putNode, as, { nodes: [node], if_exists: 'skip' }));
  return current(ctx, id)?.type === 'repo' ? id : null;
}

/**
 * A `resolves` edge from the repo node to `id`, attributed with the pull request number or the
 * commit. The repo node holds at most 40 edges like any node: when full, its oldest `resolves`
 * edge to a node that is finished anyway makes room (that node keeps its status, commits and
 * pull request links); when none can go, the edge is not written and the status alone records it.
 */
export async function resolvesEdge(ctx: InboundContext, as: OpContext, id: string, attrs: Record<string, string>): Promise<void> {
  const repo = await ensureRepoNode(ctx, as);
  if (!repo) return;
  const record = current(ctx, repo);
  if (!record) return;
  const same = record.edges.find((e) => e.type === 'resolves' && e.to === id);
  if (same && Object.entries(attrs).every(([k, v]) => same[k] === v)) return;
  const remove: Array<{ type: string; to: string }> = [];
  if (!same && record.edges.length >= LIMITS.edges) {
    const oldest = record.edges.find((e) => {
      const target = ctx.tenant.index.get(e.to);
      return e.type === 'resolves' && target !== undefined && isTerminal(ctx, target);
    });
    if (!oldest) {
      ctx.log.warn('github: the repo node holds 40 edges to unfinished nodes; resolves edge not written', {
        org: ctx.tenant.org,
        delivery: ctx.delivery,
        node: id,
      });
      return;
    }
    remove.push({ type: 'resolves', to: oldest.to });
  }
  await attempt(ctx, `resolves ${repo} -> ${id}`, () =>
    invoke(patchNode, as, {
      id: repo,
      revision: record.revision,
      add_edges: [{ type: 'resolves', to: id, ...attrs }],
      ...(remove.length > 0 ? { remove_edges: remove } : {}),
    }),
  );
}

/**
 * Whether a closing reference may finish a node of `type`: only a type the link's mappings say
 * how to close (`closed_status`: task and issue by default). `Fixes spec-x` does not accept a
 * spec or a decision: for those it is a reference.
 */
export function closable(ctx: InboundContext, type: string): boolean {
  return Object.hasOwn(ctx.map.mappings.closed_status, type);
}

/**
 * Finishes a node a merged change closes: the `resolves` edge first (the evidence before the
 * completion, as the completion-resolver gate orders them), then the status the link's
 * mappings give a completed issue of its type, through set_status's transition gate, as a
 * member's change would.
 */
export async function closeByCode(ctx: InboundContext, as: OpContext, id: string, attrs: Record<string, string>): Promise<void> {
  await resolvesEdge(ctx, as, id, attrs);
  const record = current(ctx, id);
  if (!record || isTerminal(ctx, record)) return;
  await moveTo(ctx, as, id, ctx.map.statusOf(record.type, 'closed', 'completed'));
}
