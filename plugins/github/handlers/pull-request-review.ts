/**
 * `pull_request_review` deliveries: a review of a pull request becomes the review edge of the
 * person the reviewer's GitHub login maps to, on each node the pull request names (refs.ts):
 * approved -> `approved-by`, changes requested -> `changes-requested-by`, a comment review or a
 * dismissed one -> `reviewed-by` (the seed pack's review family: one edge per person, a new
 * verdict replaces the last). A plain comment never replaces a verdict the person already gave.
 * A reviewer who maps to nobody has no person to point at: nothing is written.
 */
import { loginOf, obj, referencedNodes, reviewEdge, str } from '../code-moves.js';
import type { GithubHandler } from './index.js';

const EDGE_OF_STATE: Record<string, string> = {
  approved: 'approved-by',
  changes_requested: 'changes-requested-by',
  commented: 'reviewed-by',
  dismissed: 'reviewed-by',
};

/** Verdicts a later plain comment from the same person does not replace. */
const VERDICTS = new Set(['approved-by', 'changes-requested-by']);

export const pullRequestReviewHandler: GithubHandler = async (ctx, payload) => {
  const p = obj(payload);
  const action = str(p.action);
  if (action !== 'submitted' && action !== 'dismissed' && action !== 'edited') return;
  const review = obj(p.review);
  const state = (str(review.state) ?? '').toLowerCase();
  const type = action === 'dismissed' ? 'reviewed-by' : EDGE_OF_STATE[state];
  if (!type) return;
  const reviewer = loginOf(review.user) ?? loginOf(p.sender);
  const person = ctx.map.personOf(reviewer);
  if (!person) return;
  const pr = obj(p.pull_request);
  const as = ctx.as(reviewer);
  for (const ref of referencedNodes(ctx, str(pr.title), str(pr.body))) {
    const record = ctx.tenant.index.get(ref.id);
    if (type === 'reviewed-by' && action !== 'dismissed' && record?.edges.some((e) => e.to === person && VERDICTS.has(e.type))) continue;
    await reviewEdge(ctx, as, ref.id, type, person);
  }
};
