/**
 * Where a client command goes and with which credential, and the one request function.
 *
 * Precedence: SVC_SERVER / SVC_TOKEN (WORKGRAPH_SERVER / WORKGRAPH_TOKEN) override the
 * profile, so scripts and agents need no file; otherwise the selected profile (--profile,
 * WORKGRAPH_PROFILE, or the current one) with its OAuth access token, refreshed with the stored
 * refresh token when it is about to expire. SVC_ORG (or the profile's org) is checked against
 * the token's tenant, never sent: the token picks the tenant.
 */
import { readProfiles, selectedProfileName, withProfilesLock, writeProfiles, type Profile } from './profiles.js';

/** Stable exit codes per error class (docs/cli.md). */
export const EXIT = { ok: 0, other: 1, usage: 2, unauthorized: 3, forbidden: 4, notFound: 5, conflict: 6, validation: 7 } as const;

export function exitForStatus(status: number): number {
  if (status === 401) return EXIT.unauthorized;
  if (status === 403) return EXIT.forbidden;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status === 400 || status === 413 || status === 422) return EXIT.validation;
  return EXIT.other;
}

/** The HTTP status class of an envelope code, for answers that carry no status (MCP tool errors). */
export function statusForCode(code: string): number {
  if (code === 'unauthorized') return 401;
  if (code === 'forbidden' || code === 'no_person') return 403;
  if (code === 'not_found') return 404;
  if (['conflict', 'transition_denied', 'lease_lost', 'lease_expired', 'outcome_conflict'].includes(code)) return 409;
  if (['validation_failed', 'invalid_node', 'bad_request', 'too_large'].includes(code)) return 422;
  return 500;
}

/** A failure that ends the run with `exitCode`; the message goes to stderr. */
export class CliFailure extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

export const usage = (message: string) => new CliFailure(EXIT.usage, message);

export interface Connection {
  server: string;
  token: string;
  org: string | undefined;
  profile: string | undefined;
}

export function trimServer(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Resolves server and token; refreshes an expiring OAuth access token first. */
export async function connect(profileFlag: string | undefined): Promise<Connection> {
  const envServer = process.env.SVC_SERVER ?? process.env.WORKGRAPH_SERVER;
  const envToken = process.env.SVC_TOKEN ?? process.env.WORKGRAPH_TOKEN;
  const envOrg = process.env.SVC_ORG ?? process.env.WORKGRAPH_ORG;
  const name = selectedProfileName(profileFlag);
  const profile = name ? readProfiles().profiles[name] : undefined;
  if (profileFlag && !profile) throw usage(`no profile '${profileFlag}' (workgraph profile list)`);
  const server = envServer ?? profile?.server;
  if (!server) throw usage('no server: set SVC_SERVER and SVC_TOKEN, or sign in with `workgraph login <server>`');
  if (envToken) return { server: trimServer(server), token: envToken, org: envOrg, profile: undefined };
  if (!profile || !name) throw usage('no token: set SVC_TOKEN, or sign in with `workgraph login <server>`');
  if (envServer && trimServer(envServer) !== trimServer(profile.server))
    throw usage(`SVC_SERVER ${envServer} is not profile '${name}' (${profile.server}): set SVC_TOKEN too`);
  const token = await accessTokenOf(name, profile);
  return { server: trimServer(profile.server), token, org: envOrg, profile: name };
}

/** The profile's access token, refreshed (under the profiles lock) when it expires within a minute. */
async function accessTokenOf(name: string, profile: Profile): Promise<string> {
  const fresh = (p: Profile | undefined) => p?.access_token && (p.access_expires_at ?? 0) > Date.now() + 60_000;
  if (fresh(profile)) return profile.access_token!;
  return withProfilesLock(async () => {
    // another run may have refreshed while this one waited for the lock
    const file = readProfiles();
    const current = file.profiles[name];
    if (!current) throw usage(`profile '${name}' disappeared`);
    if (fresh(current)) return current.access_token!;
    if (!current.refresh_token || !current.client_id)
      throw new CliFailure(
        EXIT.unauthorized,
        `profile '${name}' holds no refresh token: sign in again with \`workgraph login ${current.server}\``,
      );
    const { refresh } = await import('./oauth.js');
    let tokens: { access_token: string; refresh_token?: string; expires_in?: number };
    try {
      tokens = await refresh(current.server, current.client_id, current.refresh_token);
    } catch (err) {
      throw new CliFailure(
        EXIT.unauthorized,
        `profile '${name}': the sign-in is no longer valid (${(err as Error).message}); run \`workgraph login ${current.server}\``,
      );
    }
    current.access_token = tokens.access_token;
    current.access_expires_at = Date.now() + (tokens.expires_in ?? 3600) * 1000;
    if (tokens.refresh_token) current.refresh_token = tokens.refresh_token;
    writeProfiles(file);
    return tokens.access_token;
  });
}

export interface HttpAnswer {
  status: number;
  contentType: string;
  bytes: Buffer;
}

export async function request(conn: Connection, method: string, path: string, body?: unknown): Promise<HttpAnswer> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${conn.token}`,
    accept: 'application/json',
    'user-agent': 'workgraph-cli',
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(conn.server + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: 'manual',
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliFailure(EXIT.other, `cannot reach ${conn.server}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', bytes: Buffer.from(await res.arrayBuffer()) };
}

/** `{error:{code,message}}` of an answer, if it is one. */
export function envelopeOf(bytes: Buffer | string): { code: string; message: string; details?: Record<string, unknown> } | null {
  try {
    const parsed = JSON.parse(bytes.toString()) as { error?: { code?: unknown; message?: unknown; details?: Record<string, unknown> } };
    if (parsed && typeof parsed.error?.code === 'string')
      return { code: parsed.error.code, message: String(parsed.error.message ?? ''), details: parsed.error.details };
  } catch {
    /* not JSON */
  }
  return null;
}

/** The failure for an error answer: exit code by status class, `code: message` for stderr. */
export function failureOf(status: number, bytes: Buffer | string): CliFailure {
  const env = envelopeOf(bytes);
  const detail = env?.details && Array.isArray(env.details.allowed) ? ` (allowed: ${(env.details.allowed as unknown[]).join(', ')})` : '';
  return new CliFailure(
    exitForStatus(status),
    env ? `${env.code}: ${env.message}${detail} [HTTP ${status}]` : `HTTP ${status}: ${bytes.toString().slice(0, 300)}`,
  );
}

/** SVC_ORG / the profile's org names the tenant the caller expects; a token of another tenant is refused before anything runs. */
export async function checkOrg(conn: Connection): Promise<void> {
  if (!conn.org) return;
  const me = await request(conn, 'GET', '/v1/me');
  if (me.status !== 200) throw failureOf(me.status, me.bytes);
  const org = (JSON.parse(me.bytes.toString()) as { org?: string }).org;
  if (org !== conn.org) throw usage(`the token belongs to org '${org}', not '${conn.org}'`);
}
