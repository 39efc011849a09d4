/**
 * The inbound dispatch table: GitHub event name (`X-GitHub-Event`) -> handler. The worker
 * (inbound.ts) calls the handler of each queued delivery in order, with an InboundContext;
 * an event with no handler is acknowledged and dropped. A handler throws to be retried with
 * backoff (an outage, a stale revision), or a SvcError with a 4xx status when the delivery can
 * never apply (the worker then marks it failed and goes on).
 *
 * Authors (docs/github.md "Authors"): every write a handler makes runs through `ctx.as(login)`,
 * an operation context acting as the person the GitHub login maps to (mapping.ts), else as the
 * link's bot person, so every commit has a real author.
 */
import type { Logger } from '../../../kernel/config.js';
import type { KernelServices, OpContext } from '../../../kernel/plugin.js';
import type { Tenant } from '../../../kernel/tenant.js';
import type { GithubStores, LinkMappings, StoredLink } from '../store.js';
import { codeHandlers } from './code.js';
import { installationHandler } from './installation.js';
import { issueCommentHandler } from './issue-comment.js';
import { issuesHandler } from './issues.js';

/** The link's mappings, bound to the tenant (mapping.ts). */
export interface Mapper {
  readonly mappings: LinkMappings;
  /** the node type of a new node from its issue's labels */
  typeOf(labels: readonly string[]): string;
  /** `p1`..`p3` from the labels, null when none maps */
  priorityOf(labels: readonly string[]): string | null;
  /** the status of a node of `type` for an issue state (`state_reason` from the payload) */
  statusOf(type: string, state: 'open' | 'closed', stateReason?: string | null): string;
  /** the issue state of a node status (outbound) */
  stateOf(type: string, status: string): { state: 'open' | 'closed'; state_reason: 'completed' | 'not_planned' | null };
  /** the person a GitHub login maps to, null: nobody */
  personOf(login: string | null | undefined): string | null;
  /** the GitHub login of a person, null: none known */
  loginOf(person: string): string | null;
}

export interface InboundContext {
  tenant: Tenant;
  services: KernelServices;
  /** the link the delivery was verified against (as stored when the delivery is processed) */
  link: StoredLink;
  stores: GithubStores;
  /** X-GitHub-Delivery */
  delivery: string;
  /** X-GitHub-Event */
  event: string;
  map: Mapper;
  /**
   * An operation context acting as the person `login` maps to, else as the link's bot person
   * (`link.bot_person`): pass it to another plugin's operation (`invoke`) to write as them.
   */
  as(login: string | null | undefined): OpContext;
  /** An operation context acting as `person` itself (editing a comment node as its author). */
  asPerson(person: string): OpContext;
  log: Logger;
}

export type GithubHandler = (ctx: InboundContext, payload: unknown) => Promise<void>;

export const handlers: Record<string, GithubHandler> = {
  issues: issuesHandler,
  issue_comment: issueCommentHandler,
  installation: installationHandler,
  // code moves work (gh-code): pull requests, reviews, pushes
  ...codeHandlers,
};
