/**
 * The GitHub REST client of the github plugin's outbound side: `@octokit/rest` with
 * `@octokit/plugin-throttling` (GitHub's primary rate limit: wait until the reset it announces;
 * secondary limits: back off by its Retry-After, else a minute; each retried a few times, then
 * the call fails and the outbound engine keeps the change queued) and `@octokit/plugin-retry`
 * (5xx and connection failures retried with a growing wait; 4xx other than the limits are not
 * retried: the request itself is wrong and repeating it will not help).
 *
 * Authentication is the link's: a fine-grained personal access token, or a GitHub App
 * installation (`@octokit/app` signs a JWT with the App's private key and exchanges it for an
 * installation token, renewed before it expires). The API base is the operator's
 * SVC_GITHUB_API_URL (GitHub Enterprise Server, or a test's mock).
 *
 * Credentials never reach a log line: Octokit's own log goes to the server's logger with the
 * request's method and path only.
 */
import type { Logger } from '../../kernel/config.js';
import type * as OctokitModule from './octokit.js';
import type { GithubOctokit } from './octokit.js';

/** How a link authenticates (the shape of `StoredLink.auth` in plugins/github/store.ts). */
export type GithubAuth =
  { kind: 'token'; token: string } | { kind: 'app'; app_id: number | string; private_key: string; installation_id: number | string };

export type GithubClient = InstanceType<typeof GithubOctokit>;

export interface ClientOptions {
  /** the REST API base (config.githubApiUrl) */
  baseUrl: string;
  log: Logger;
  /** how many times a rate-limited or failed request is retried before the call fails (default 3) */
  retries?: number;
  /** the first wait of the retry plugin, ms; it grows as (n+1)^2 (default 1000) */
  retryBaseMs?: number;
  /** tags log lines (the tenant, the link) */
  context?: Record<string, unknown>;
  /** cuts every request in flight (the tenant closing here) */
  signal?: AbortSignal;
  /** a rate limit asking to wait longer than this (s) fails the call instead: the caller's own backoff waits (default 60) */
  maxLimitWaitS?: number;
}

/** octokit.ts, imported on the first client a link needs: a server with no GitHub link never parses Octokit. */
let octokit: Promise<typeof OctokitModule> | null = null;

/** The client for a link's credentials. */
export async function githubClient(auth: GithubAuth, opts: ClientOptions): Promise<GithubClient> {
  const m = await (octokit ??= import('./octokit.js').catch((err: unknown) => {
    octokit = null;
    throw err;
  }));
  return auth.kind === 'token' ? m.tokenClient(auth.token, opts) : m.appClient(auth, opts);
}

/** An HTTP status of a failed Octokit call (RequestError), or null when there was no answer. */
export function statusOf(err: unknown): number | null {
  if (err && typeof err === 'object' && 'status' in err && typeof err.status === 'number') return err.status;
  return null;
}
