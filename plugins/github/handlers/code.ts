/**
 * The handlers by which code moves work (docs/github.md "Pull requests and commits"), and the
 * queued first sync of a new link (docs/github.md "First sync"), merged into the dispatch table
 * of handlers/index.ts: one place, so the table's file changes by two lines for all of them.
 */
import { FIRST_SYNC_EVENT, firstSyncHandler } from '../first-sync.js';
import type { GithubHandler } from './index.js';
import { pullRequestReviewHandler } from './pull-request-review.js';
import { pullRequestHandler } from './pull-request.js';
import { pushHandler } from './push.js';

export const codeHandlers: Record<string, GithubHandler> = {
  pull_request: pullRequestHandler,
  pull_request_review: pullRequestReviewHandler,
  push: pushHandler,
  // not a GitHub event: the first sync the link operation queues (first-sync.ts)
  [FIRST_SYNC_EVENT]: firstSyncHandler,
};
