/**
 * The Octokit side of plugins/github/client.ts (its header says what the client does): the REST
 * client with the throttling and retry plugins, authenticated with a token or as an App
 * installation. Its own module so that the bundle loads Octokit only when a link first needs a
 * client (client.ts imports it dynamically).
 */
import { App } from '@octokit/app';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit as RestOctokit } from '@octokit/rest';
import type { ClientOptions, GithubClient } from './client.js';

export const GithubOctokit = RestOctokit.plugin(throttling, retry);

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
