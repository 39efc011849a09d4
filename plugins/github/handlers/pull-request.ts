/**
 * `pull_request` deliveries (docs/github.md "Pull requests and commits"). The nodes a pull
 * request names (`Fixes task-x`, `Refs task-y` in its title or body, plugins/github/refs.ts):
 *
 * - opened, reopened, ready_for_review, edited while open (a draft only once it is ready): each
 *   gets the pull request's address in `pull_requests`, and one not finished moves to its
 *   type's review status (types without one keep theirs), remembering where it came from;
 * - review_requested: a `review-requested` edge to the person the reviewer's login maps to;
 * - closed and merged into the default branch: a closing reference gets a `resolves` edge from
 *   the repository's node and is finished through set_status's transition gate; a referencing
 *   one keeps the link and returns from review (the pull request is over, its work may not be).
 *   Merged into another branch, closing references only reference, as on GitHub;
 * - closed without merge, converted_to_draft: each node this pull request moved to review and
 *   still in review returns to the status it came from.
 */
import type { Tenant } from '../../../kernel/tenant.js';
import {
  closable,
  closeByCode,
  isTerminal,
  linkCommitTo,
  linkPullRequest,
  loginOf,
  moveTo,
  num,
  obj,
  referencedNodes,
  reviewEdge,
  reviewStatusOf,
  str,
} from '../code-moves.js';
import type { GithubHandler, InboundContext } from './index.js';

/** Where a pull request moved a node from: the status it returns to when the pull request closes unmerged. */
export interface ReviewMove {
  link: string;
  pull_request: number;
  node: string;
  from: string;
  at: string;
}

/** The review moves, by `<link>:<number>:<node>` (the tenant's state store: the graph holds the node's status, not why). */
export function reviewMovesOf(tenant: Tenant) {
  return tenant.state.collection<ReviewMove>('github-review-moves');
}

const moveKey = (ctx: InboundContext, number: number, node: string) => `${ctx.link.id}:${number}:${node}`;

interface PullRequest {
  number: number;
  url: string;
  title: string | null;
  body: string | null;
  draft: boolean;
  merged: boolean;
  open: boolean;
  author: string | null;
  mergedBy: string | null;
  mergeSha: string | null;
  intoDefault: boolean;
}

function readPullRequest(payload: unknown): PullRequest | null {
  const p = obj(payload);
  const pr = obj(p.pull_request);
  const number = num(pr.number);
  const url = str(pr.html_url);
  if (number === null || url === null) return null;
  const base = str(obj(pr.base).ref);
  const defaultBranch = str(obj(p.repository).default_branch);
  return {
    number,
    url,
    title: str(pr.title),
    body: str(pr.body),
    draft: pr.draft === true,
    merged: pr.merged === true,
    open: pr.state === 'open',
    author: loginOf(pr.user),
    mergedBy: loginOf(pr.merged_by) ?? loginOf(p.sender),
    mergeSha: str(pr.merge_commit_sha),
    // GitHub applies closing keywords only to pull requests into the default branch
    intoDefault: base === null || defaultBranch === null || base === defaultBranch,
  };
}

/** Links the pull request and moves what it names to review. */
async function toReview(ctx: InboundContext, pr: PullRequest, actorLogin: string | null): Promise<void> {
  const as = ctx.as(actorLogin);
  const moves = reviewMovesOf(ctx.tenant);
  for (const ref of referencedNodes(ctx, pr.title, pr.body)) {
    await linkPullRequest(ctx, as, ref.id, pr.url);
    if (pr.draft) continue;
    const record = ctx.tenant.index.get(ref.id);
    const review = record ? reviewStatusOf(ctx, record.type) : null;
    if (!record || !review || record.status === review || isTerminal(ctx, record)) continue;
    const key = moveKey(ctx, pr.number, ref.id);
    // written before the move: a retry after a crash between the two still knows where it came from
    if (!moves.has(key))
      await moves.set(key, {
        link: ctx.link.id,
        pull_request: pr.number,
        node: ref.id,
        from: record.status,
        at: new Date(ctx.services.clock.now()).toISOString(),
      });
    if (!(await moveTo(ctx, as, ref.id, review))) await moves.delete(key);
  }
}

/** Returns from review the nodes this pull request moved there and that are still in review (`only`: those ids). */
async function backFromReview(ctx: InboundContext, pr: PullRequest, actorLogin: string | null, only?: ReadonlySet<string>): Promise<void> {
  const as = ctx.as(actorLogin);
  const moves = reviewMovesOf(ctx.tenant);
  const prefix = `${ctx.link.id}:${pr.number}:`;
  for (const [key, move] of [...moves.entries()]) {
    if (!key.startsWith(prefix) || (only && !only.has(move.node))) continue;
    const record = ctx.tenant.index.get(move.node);
    const review = record ? reviewStatusOf(ctx, record.type) : null;
    // someone moved it on since (finished it, sent it back): their move stands
    if (record && review && record.status === review) await moveTo(ctx, as, move.node, move.from);
    await moves.delete(key);
  }
}

async function merged(ctx: InboundContext, pr: PullRequest): Promise<void> {
  const as = ctx.as(pr.mergedBy);
  const referencing = new Set<string>();
  for (const ref of referencedNodes(ctx, pr.title, pr.body)) {
    await linkPullRequest(ctx, as, ref.id, pr.url);
    if (pr.mergeSha) await linkCommitTo(ctx, as, ref.id, pr.mergeSha);
    if (ref.kind === 'closes' && pr.intoDefault && closable(ctx, ref.record.type)) {
      await closeByCode(ctx, as, ref.id, { pr: String(pr.number), ...(pr.mergeSha ? { sha: pr.mergeSha } : {}) });
      await reviewMovesOf(ctx.tenant).delete(moveKey(ctx, pr.number, ref.id));
    } else referencing.add(ref.id);
  }
  await backFromReview(ctx, pr, pr.mergedBy, referencing);
}

export const pullRequestHandler: GithubHandler = async (ctx, payload) => {
  const pr = readPullRequest(payload);
  if (!pr) return;
  const p = obj(payload);
  const action = str(p.action) ?? '';
  const sender = loginOf(p.sender);
  switch (action) {
    case 'opened':
    case 'reopened':
      return toReview(ctx, pr, pr.author ?? sender);
    case 'ready_for_review':
    case 'edited':
      if (pr.open) return toReview(ctx, pr, action === 'edited' ? sender : (pr.author ?? sender));
      return;
    case 'converted_to_draft':
      return backFromReview(ctx, pr, sender);
    case 'review_requested': {
      const person = ctx.map.personOf(loginOf(p.requested_reviewer));
      if (!person) return;
      const as = ctx.as(sender);
      for (const ref of referencedNodes(ctx, pr.title, pr.body)) {
        const record = ctx.tenant.index.get(ref.id);
        // a review already given by this person stands (the family keeps one edge per person)
        if (record?.edges.some((e) => e.to === person && ctx.tenant.registry.edgeTypes.get(e.type)?.review_family)) continue;
        await reviewEdge(ctx, as, ref.id, 'review-requested', person);
      }
      return;
    }
    case 'closed':
      return pr.merged ? merged(ctx, pr) : backFromReview(ctx, pr, sender);
    default:
      return;
  }
};
