/**
 * What the github plugin keeps, all in the tenant's operational state store
 * (kernel/state-store.ts): never in the graph, so credentials never reach a commit, and cluster
 * mode's PostgreSQL store carries every collection (fenced like every other owner write), so a
 * fail-over resumes the queues where they stopped.
 *
 * - `github-links`: the linked repositories (StoredLink): credentials, webhook secret, mappings;
 * - `github-sync`: one SyncRecord per linked node, the last state both sides agreed on (the
 *   loop and conflict rules below read it);
 * - `github-inbound`: the durable inbound queue (InboundDelivery, one file per delivery: payloads
 *   can be large), which is also the idempotency record of `X-GitHub-Delivery` ids.
 *
 * The sync rule (docs/github.md "Loops and conflicts"): `synced` is the last state both sides
 * agreed on. An inbound change equal to `synced` is ignored (it is the echo of our own write);
 * an outbound node change equal to `synced` sends nothing; whoever applies a change on one side
 * updates `synced` at once. A change arriving from one side while the other side also moved
 * away from `synced` is not applied over it: it is kept as a comment holding both texts.
 */
import { randomBytes } from 'node:crypto';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';

/** repositories linked per tenant at most */
export const MAX_LINKS = 50;

/** How the server calls GitHub for a link: a fine-grained token, or a GitHub App installation. */
export type LinkAuth = { kind: 'token'; token: string } | { kind: 'app'; app_id: number; private_key: string; installation_id: number };

/**
 * The mappings of a link (mapping.ts applies them over its defaults). Keys of `labels_*` and
 * `people` are matched case-insensitively (stored lower-case).
 */
export interface LinkMappings {
  /** label -> node type (`bug` -> `issue`); the first label that maps decides, else `default_type` */
  label_types: Record<string, string>;
  /** label -> priority `p1`..`p3` */
  label_priorities: Record<string, string>;
  /** GitHub login -> person node id; a login not listed maps through a person's `github` field */
  people: Record<string, string>;
  /** node type -> status for an open issue (default: the type's first status) */
  open_status: Record<string, string>;
  /** node type -> status for an issue closed as completed */
  closed_status: Record<string, string>;
  /** node type -> status for an issue closed as not planned (or duplicate) */
  not_planned_status: Record<string, string>;
  /** the type of a new node when no label maps */
  default_type: string;
}

export interface StoredLink {
  /** `ghl_<hex>` */
  id: string;
  /** `owner/name`, as GitHub spells it (matched case-insensitively) */
  repo: string;
  /** credentials: never answered, never logged, never in the graph */
  auth: LinkAuth;
  /** the webhook secret GitHub signs deliveries with (X-Hub-Signature-256): never answered back */
  webhook_secret: string;
  mappings: LinkMappings;
  /** false: deliveries are acknowledged and dropped, nothing is sent (an admin's choice or the App uninstalled) */
  enabled: boolean;
  /** why the server disabled it (installation deleted or suspended), null when it did not */
  disabled_reason: string | null;
  /** the project new nodes go into, null: none */
  project: string | null;
  /**
   * The person whose name writes what GitHub changes when the GitHub login maps to nobody
   * (the link's bot identity, docs/github.md "Authors"): the admin who linked the repository
   * unless changed.
   */
  bot_person: string;
  created: string;
  created_by: string;
  updated: string;
  updated_by: string;
}

/** The fields kept in step, as both sides last agreed on them. */
export interface SyncedIssue {
  title: string;
  /** the body as the node holds it (GitHub's, unless it was cut to the node limit: `body_truncated`) */
  body: string;
  state: 'open' | 'closed';
  /** label names, sorted */
  labels: string[];
  /** GitHub logins, lower-case, sorted */
  assignees: string[];
}

export interface SyncRecord {
  node: string;
  /** the link id */
  link: string;
  /** `owner/name` */
  repo: string;
  issue_number: number;
  /** GitHub's numeric issue id */
  issue_id: number;
  synced: SyncedIssue;
  /** the node revision `synced` was read from or written as */
  node_revision: string;
  /** the issue's `updated_at` when `synced` was taken (ISO) */
  issue_updated_at: string;
  /**
   * The issue body was longer than a node body may be (8 KB): the node holds its start and a
   * link to the issue; an outbound body change is then never sent (it would cut the issue's).
   */
  body_truncated?: boolean;
  /** issue comment id -> comment node id (issue_comment events) */
  comments?: Record<string, string>;
  /**
   * Set when the pairing ended while the issue lives on (the node was deleted here): later
   * deliveries of the issue are ignored (a deleted node is not brought back) and nothing is
   * sent for it. Such a record is no synced issue.
   */
  ended?: string;
}

/** One webhook delivery: queued durably before the 202, processed in `seq` order by the tenant's worker. */
export interface InboundDelivery {
  /** X-GitHub-Delivery */
  id: string;
  /** arrival order within the tenant */
  seq: number;
  /** the link it was verified against */
  link: string;
  /** X-GitHub-Event */
  event: string;
  /** the payload's `action`, '' when it has none (push) */
  action: string;
  received: string;
  state: 'queued' | 'done' | 'failed';
  /** failed attempts so far */
  attempts: number;
  /** ms since epoch before which the next attempt is not made */
  next_attempt_ms: number;
  last_error: string | null;
  /** the parsed payload while queued; dropped once done or failed (the id stays for idempotency) */
  payload: unknown;
  /** when it was done or failed (ISO), null while queued */
  finished: string | null;
}

export interface GithubStores {
  links: Collection<StoredLink>;
  sync: Collection<SyncRecord>;
  inbound: Collection<InboundDelivery>;
}

export function storesOf(tenant: Tenant): GithubStores {
  return {
    links: tenant.state.collection<StoredLink>('github-links'),
    sync: tenant.state.collection<SyncRecord>('github-sync', { layout: 'file-per-key' }),
    inbound: tenant.state.collection<InboundDelivery>('github-inbound', { layout: 'file-per-key' }),
  };
}

export function newLinkId(): string {
  return `ghl_${randomBytes(9).toString('hex')}`;
}

/** A webhook secret for GitHub's settings page when the admin did not give one. */
export function newWebhookSecret(): string {
  return randomBytes(32).toString('hex');
}

/** The link of `repo` (`owner/name`, case-insensitive). */
export function linkOfRepo(stores: GithubStores, repo: string): StoredLink | undefined {
  const wanted = repo.toLowerCase();
  for (const link of stores.links.values()) if (link.repo.toLowerCase() === wanted) return link;
  return undefined;
}

/** The links of a GitHub App installation. */
export function linksOfInstallation(stores: GithubStores, installationId: number): StoredLink[] {
  return [...stores.links.values()].filter((l) => l.auth.kind === 'app' && l.auth.installation_id === installationId);
}

/** The sync record of issue `number` of a link. */
export function syncOfIssue(stores: GithubStores, link: string, number: number): SyncRecord | undefined {
  for (const record of stores.sync.values()) if (record.link === link && record.issue_number === number) return record;
  return undefined;
}

/** The sync record of a node, if it is linked to an issue. */
export function syncOfNode(stores: GithubStores, node: string): SyncRecord | undefined {
  return stores.sync.get(node);
}
