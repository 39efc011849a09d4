/**
 * The github plugin's operations, each declared once (schemas in schemas.ts, the functions in
 * operations.ts); the routes, the MCP tools and the OpenAPI document read these.
 */
import { defineOperation, object } from '../../kernel/operation.js';
import * as ops from './operations.js';
import { LinkIdInput, LinkInput, LinkOutput, LinkView, ListLinksOutput, UnlinkOutput, UpdateLinkInput } from './schemas.js';

export const linkGithubRepo = defineOperation({
  name: 'link_github_repo',
  summary: 'Link a GitHub repository to the tenant (admin)',
  description:
    'Links `repo` (owner/name) with a fine-grained `token` or an `app` installation (app_id, private_key, installation_id) and a `webhook_secret` (absent: generated and answered once as `webhook_secret`). `mappings` override the defaults (labels to type and priority, logins to people, states to statuses; docs/github.md). The answer gives the `webhook_url` to paste into the repository\u2019s webhook settings (content type application/json); credentials are never answered. 409 when the repository is already linked.',
  input: LinkInput,
  output: LinkOutput,
  errors: [403, 409],
  example: { repo: 'acme/web', token: 'github_pat_11AAAA...', mappings: { label_priorities: { 'sev-1': 'p1' } } },
  run: ops.linkGithubRepo,
});

export const listGithubLinks = defineOperation({
  name: 'list_github_links',
  summary: 'The tenant\u2019s linked GitHub repositories (admin)',
  description: 'Every link with its mappings, state and inbound queue (queued, failed, last error); never a credential.',
  input: object({}),
  output: ListLinksOutput,
  errors: [403],
  run: (ctx) => ops.listGithubLinks(ctx),
});

export const getGithubLink = defineOperation({
  name: 'get_github_link',
  summary: 'One linked GitHub repository (admin)',
  input: LinkIdInput,
  output: LinkView,
  errors: [403],
  run: ops.getGithubLink,
});

export const updateGithubLink = defineOperation({
  name: 'update_github_link',
  summary: 'Change a GitHub link: credentials, secret, mappings, enabled (admin)',
  description:
    'Changes the given fields. A new `token` or `app` replaces the credentials; `rotate_webhook_secret: true` answers a new `webhook_secret` once. Each map given in `mappings` replaces that map (over the defaults); the others stay. `enabled: true` resumes a link the server disabled (App uninstalled or suspended).',
  input: UpdateLinkInput,
  output: LinkOutput,
  errors: [403],
  example: { enabled: true },
  run: ops.updateGithubLink,
});

export const unlinkGithubRepo = defineOperation({
  name: 'unlink_github_repo',
  summary: 'Unlink a GitHub repository (admin)',
  description:
    'Removes the link, its credentials and the pairing of its issues with nodes; the nodes stay. Deliveries still queued for it are dropped.',
  input: LinkIdInput,
  output: UnlinkOutput,
  errors: [403],
  run: ops.unlinkGithubRepo,
});
