/**
 * `push` deliveries: each commit pushed to a branch links itself (link_commit, `<repo>@<sha>`)
 * to every node its message names (refs.ts); on the repository's default branch a closing
 * reference (`Fixes task-x`) also finishes the node: a `resolves` edge from the repository's
 * node, then the completed status through set_status's transition gate. Tags and branch
 * deletions carry no work. Each commit is written as the person its author's GitHub login maps
 * to (else the pusher's, else the link's bot person).
 */
import { closable, closeByCode, linkCommitTo, list, loginOf, obj, referencedNodes, str } from '../code-moves.js';
import type { GithubHandler } from './index.js';

export const pushHandler: GithubHandler = async (ctx, payload) => {
  const p = obj(payload);
  const ref = str(p.ref) ?? '';
  if (!ref.startsWith('refs/heads/') || p.deleted === true) return;
  const branch = ref.slice('refs/heads/'.length);
  const onDefault = branch === str(obj(p.repository).default_branch);
  const pusher = loginOf(p.sender) ?? str(obj(p.pusher).name);
  for (const raw of list(p.commits)) {
    const commit = obj(raw);
    const sha = (str(commit.id) ?? '').toLowerCase();
    if (!sha) continue;
    const as = ctx.as(str(obj(commit.author).username) ?? pusher);
    for (const node of referencedNodes(ctx, str(commit.message))) {
      await linkCommitTo(ctx, as, node.id, sha);
      if (onDefault && node.kind === 'closes' && closable(ctx, node.record.type)) await closeByCode(ctx, as, node.id, { sha });
    }
  }
};
