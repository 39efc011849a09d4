/**
 * Who may call each github operation (kernel/access.ts): admins, with a person's own
 * credential. A link holds credentials that write to GitHub and lets GitHub write into the
 * graph, so agent tokens are refused, an admin's agent included.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

const ALL = "the tenant's GitHub links";

export const githubAccess: AccessMap = {
  link_github_repo: { callers: callers.humans, admin: true, scope: `${ALL}: a new one (a generated webhook secret answered once)` },
  list_github_links: { callers: callers.humans, admin: true, scope: `${ALL}, read-only, never a credential` },
  get_github_link: { callers: callers.humans, admin: true, scope: `${ALL}, read-only, never a credential` },
  update_github_link: { callers: callers.humans, admin: true, scope: ALL },
  unlink_github_repo: { callers: callers.humans, admin: true, scope: `${ALL}: the link and its issue pairings (nodes stay)` },
};
