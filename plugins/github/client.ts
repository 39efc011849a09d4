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
import { App } from '@octokit/app';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit as RestOctokit } from '@octokit/rest';
import type { Logger } from '../../kernel/config.js';

/** How a link authenticates (the shape of `StoredLink.auth` in plugins/github/store.ts). */
export type GithubAuth =
  { kind: 'token'; token: string } | { kind: 'app'; app_id: number | string; private_key: string; installation_id: number | string };

export const GithubOctokit = RestOctokit.plugin(throttling, retry);
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

/** the Octokit class @octokit/app accepts (its own dependency's @octokit/core) */
type AppOctokit = NonNullable<ConstructorParameters<typeof App>[0]['Octokit']>;

const USER_AGENT = 'work-graph-github-sync';

/** Octokit's options shared by both kinds of authentication. */
function baseOptions(opts: ClientOptions): Record<string, unknown> {
  const retries = opts.retries ?? 3;
  const maxWait = opts.maxLimitWaitS ?? 60;
  const ctx = opts.context ?? {};
  const note = (msg: string, fields: Record<string, unknown>) => opts.log.warn(msg, { ...ctx, ...fields });
  return {
    baseUrl: opts.baseUrl,
    userAgent: USER_AGENT,
    // Octokit logs request details at debug/info; warnings and errors only, never a header
    log: {
      debug: () => undefined,
      info: () => undefined,
      warn: (message: string) => note('github client warning', { message }),
      error: (message: string) => opts.log.error('github client error', { ...ctx, message }),
    },
    throttle: {
      onRateLimit: (retryAfter: number, options: { method: string; url: string }, _o: unknown, retryCount: number) => {
        note('github rate limit reached', { method: options.method, path: options.url, retry_after_s: retryAfter, retry: retryCount });
        // a wait of up to an hour (the primary limit's reset) is not held in memory: the call fails and the caller's durable backoff waits
        return retryCount < retries && retryAfter <= maxWait;
      },
      onSecondaryRateLimit: (retryAfter: number, options: { method: string; url: string }, _o: unknown, retryCount: number) => {
        note('github secondary rate limit', { method: options.method, path: options.url, retry_after_s: retryAfter, retry: retryCount });
        return retryCount < retries && retryAfter <= maxWait;
      },
    },
    retry: { retries, retryAfterBaseValue: opts.retryBaseMs ?? 1000 },
    ...(opts.signal ? { request: { signal: opts.signal } } : {}),
  };
}

/** A client authenticated with a token. */
export function tokenClient(token: string, opts: ClientOptions): GithubClient {
  return new GithubOctokit({ ...baseOptions(opts), auth: token });
}

/**
 * A client authenticated as an App installation: the installation token is fetched (and
 * renewed) by `@octokit/app`'s auth strategy on the first request, not here, so building a
 * client does not call GitHub.
 */
export async function appClient(
  auth: { app_id: number | string; private_key: string; installation_id: number | string },
  opts: ClientOptions,
): Promise<GithubClient> {
  // @octokit/app types its Octokit option as @octokit/core's class; ours extends it with the REST methods
  const Octokit = GithubOctokit.defaults(baseOptions(opts)) as unknown as AppOctokit;
  const app = new App({ appId: auth.app_id, privateKey: auth.private_key, Octokit });
  const client = await app.getInstallationOctokit(Number(auth.installation_id));
  return client as unknown as GithubClient;
}

/** The client for a link's credentials. */
export function githubClient(auth: GithubAuth, opts: ClientOptions): Promise<GithubClient> {
  return auth.kind === 'token' ? Promise.resolve(tokenClient(auth.token, opts)) : appClient(auth, opts);
}

/** An HTTP status of a failed Octokit call (RequestError), or null when there was no answer. */
export function statusOf(err: unknown): number | null {
  if (err && typeof err === 'object' && 'status' in err && typeof err.status === 'number') return err.status;
  return null;
}
