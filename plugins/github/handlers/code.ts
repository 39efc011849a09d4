/**
 * The handlers by which code moves work (docs/github.md "Pull requests and commits"), merged
 * into the dispatch table of handlers/index.ts: one place, so the table's file changes by two
 * lines for all three.
 */
import type { GithubHandler } from './index.js';
import { pullRequestReviewHandler } from './pull-request-review.js';
import { pullRequestHandler } from './pull-request.js';
import { pushHandler } from './push.js';

export const codeHandlers: Record<string, GithubHandler> = {
  pull_request: pullRequestHandler,
  pull_request_review: pullRequestReviewHandler,
  push: pushHandler,
};
