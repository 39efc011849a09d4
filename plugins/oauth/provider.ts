/**
 * The authorization server behind the MCP SDK's OAuth handlers (authorize, token, register,
 * revoke): clients (dynamic registration, or client ID metadata documents), the sign-in and
 * consent flow's pending authorizations, single-use PKCE codes (both in the global store
 * `oauth`, so a flow's requests may reach different processes of a cluster), and the tokens.
 *
 * Token model (kernel/auth.ts): a consent makes one `oauth-grant` record whose `parent` is the
 * PAT the person signed in with, in that PAT's tenant. The grant's `svc_oat_` access tokens
 * (1 h) and rotating refresh tokens (30 d) are records whose parent is the grant. Revoking the
 * PAT, an admin revoke or offboarding revokes the grant with everything under it, and
 * `oauth_grants_revoked` counts the grants. Every token is stored only as its SHA-256.
 */
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import {
  CustomOAuthError,
  InvalidClientError,
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidTargetError,
  InvalidTokenError,
  TemporarilyUnavailableError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Response } from 'express';
import { createHash, randomBytes } from 'node:crypto';
import { generateToken, hashToken, isLive, newTokenRecord, type TokenRecord } from '../../kernel/auth.js';
import { globalStore, type KernelServices } from '../../kernel/plugin.js';
import type { Collection, StateStore } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import { revokeWithCascade } from '../identity/public.js';
import { fetchMetadataDocument, MetadataRefused } from './metadata-fetch.js';
import { consentPage } from './pages.js';

export const ACCESS_TTL_S = 3600;
export const REFRESH_TTL_S = 30 * 86_400;
const CODE_TTL_MS = 60_000;
const PENDING_TTL_MS = 10 * 60_000;
/** expired records are swept at most this often (a sweep reads every record: per request it made N requests cost N^2) */
const SWEEP_EVERY_MS = 60_000;
/** live pending authorizations at most, server-wide (each is about a kilobyte): past it, authorize answers 503 */
export const MAX_PENDING = 20_000;
/** what a client may name itself (registration refuses longer; a metadata document's is cut) */
export const MAX_CLIENT_NAME = 200;
/** a registered client's metadata as JSON, and its redirect URIs */
const MAX_CLIENT_JSON = 8 * 1024;
const MAX_REDIRECT_URIS = 10;
export const MAX_URI = 2048;
/** a consumed code is remembered this long past its expiry (a replay revokes its grant) */
const USED_CODE_KEEP_MS = 10 * 60_000;
export const SCOPE = 'workgraph';

/**
 * A pending authorization: a reference to its client and bounded fields only (the id, a name
 * cut to MAX_CLIENT_NAME; state, scope, redirect URI and resource are capped by the authorize
 * handler), so what a stranger's request stores does not grow with what the client declares.
 */
export interface Pending {
  id: string;
  csrf: string;
  client: { id: string; name: string };
  params: AuthorizationParams;
  expires: number;
  /** set once the person signed in with a PAT */
  signedIn?: { org: string; person: string; name: string; patHash: string };
}

interface Code {
  clientId: string;
  redirectUri: string;
  challenge: string;
  resource: string;
  org: string;
  person: string;
  patHash: string;
  expires: number;
  used: boolean;
}

const randomId = () => randomBytes(32).toString('base64url');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * A redirect URI this server registers and redirects to: https, or http on a loopback host
 * (RFC 8252 section 7.3: a native app's listener on the person's own machine), absolute,
 * without a fragment or credentials, at most MAX_URI long. Anything else (http to another
 * host, custom schemes) would let anyone who registers a client send the person's browser,
 * and an authorization code, wherever they like.
 */
export function allowedRedirectUri(uri: string): boolean {
  if (uri.length > MAX_URI) return false;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.hash || uri.includes('#') || url.username || url.password) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

/** A loopback redirect URI: the only kind an authorize error is redirected to without the person's action (the rest get a page). */
export function loopbackRedirectUri(uri: string): boolean {
  try {
    const url = new URL(uri);
    return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  } catch {
    return false;
  }
}

const cut = (s: string, max: number) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * Clients: registered ones in the global store `oauth` (SVC_DATA_DIR/oauth/clients/, or
 * PostgreSQL in cluster mode); https client ids are metadata documents (metadata-fetch.ts).
 * Whatever a client was stored with, only its allowed redirect URIs are ever used (a client
 * registered before the rule keeps the rest on disk but is never redirected there).
 */
class Clients implements OAuthRegisteredClientsStore {
  private readonly registered: Collection<OAuthClientInformationFull>;
  private readonly documents = new Map<string, { client: OAuthClientInformationFull; at: number }>();

  constructor(
    store: StateStore,
    private readonly services: KernelServices,
  ) {
    // one file per client: registration is open to anyone (rate limited), so a registration must not rewrite every client
    this.registered = store.collection<OAuthClientInformationFull>('clients', { layout: 'file-per-key' });
  }

  async getClient(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    if (clientId.length === 0 || clientId.length > MAX_URI) return undefined;
    // read-through: a client another server process registered a moment ago
    const known = await this.registered.fetch(clientId);
    if (known) return { ...known, redirect_uris: known.redirect_uris.filter(allowedRedirectUri) };
    if (!/^https?:\/\//.test(clientId)) return undefined;
    return this.metadataDocument(clientId);
  }

  async registerClient(client: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>): Promise<OAuthClientInformationFull> {
    const full = client as OAuthClientInformationFull;
    if (full.redirect_uris.length > MAX_REDIRECT_URIS) throw new InvalidClientMetadataError(`at most ${MAX_REDIRECT_URIS} redirect URIs`);
    const refused = full.redirect_uris.find((u) => !allowedRedirectUri(u));
    if (refused !== undefined) {
      throw new CustomOAuthError(
        'invalid_redirect_uri',
        `redirect URIs must be https, or http on a loopback host (127.0.0.1, [::1], localhost) for a native app, without a fragment, at most ${MAX_URI} characters; refused: ${cut(refused, 200)}`,
      );
    }
    if ((full.client_name ?? '').length > MAX_CLIENT_NAME)
      throw new InvalidClientMetadataError(`client_name is at most ${MAX_CLIENT_NAME} characters`);
    if (JSON.stringify(full).length > MAX_CLIENT_JSON)
      throw new InvalidClientMetadataError(`the client metadata is at most ${MAX_CLIENT_JSON} bytes as JSON`);
    await this.registered.set(full.client_id, full);
    return full;
  }

  /**
   * A client ID metadata document (the MCP authorization spec's alternative to registration):
   * the client id is an https URL on a public address serving the client's metadata, whose
   * `client_id` must be that URL (metadata-fetch.ts says how it is fetched). Cached five
   * minutes; the cache holds at most 1000 documents.
   */
  private async metadataDocument(url: string): Promise<OAuthClientInformationFull | undefined> {
    const cached = this.documents.get(url);
    if (cached && Date.now() - cached.at < 300_000) return cached.client;
    try {
      const doc = (await fetchMetadataDocument(url, {
        allowPrivate: this.services.config.oauthAllowPrivateMetadata,
      })) as Partial<OAuthClientInformationFull> | null;
      if (!doc || typeof doc !== 'object' || doc.client_id !== url || !Array.isArray(doc.redirect_uris)) return undefined;
      const redirects = doc.redirect_uris
        .filter((u): u is string => typeof u === 'string' && allowedRedirectUri(u))
        .slice(0, MAX_REDIRECT_URIS);
      if (redirects.length === 0) return undefined;
      const client: OAuthClientInformationFull = {
        client_id: url,
        redirect_uris: redirects,
        client_name: typeof doc.client_name === 'string' ? cut(doc.client_name, MAX_CLIENT_NAME) : url,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      };
      if (this.documents.size >= 1000) this.documents.delete(this.documents.keys().next().value!);
      this.documents.set(url, { client, at: Date.now() });
      return client;
    } catch (err) {
      if (!(err instanceof MetadataRefused)) throw err;
      this.services.log.info('oauth client metadata document refused', { client_id: cut(url, 200), reason: err.message });
      return undefined;
    }
  }
}

/** A pending authorization as stored (JSON: the requested resource as a string). */
interface StoredPending extends Omit<Pending, 'params'> {
  params: Omit<AuthorizationParams, 'resource'> & { resource?: string };
}

/** A consumed code, kept until a while after its expiry: a replay revokes the grant it produced. */
interface UsedCode {
  clientId: string;
  challenge: string;
  org: string;
  grant: string;
  expires: number;
}

const toStored = (p: Pending): StoredPending => ({ ...p, params: { ...p.params, resource: p.params.resource?.href } });
/** A record stored before pending authorizations held a client reference held the whole client (PostgreSQL keeps them across an upgrade for their ten minutes). */
const clientRef = (c: Pending['client'] | Partial<OAuthClientInformationFull>): Pending['client'] =>
  'id' in c && typeof c.id === 'string'
    ? (c as Pending['client'])
    : {
        id: String((c as OAuthClientInformationFull).client_id),
        name: cut(String((c as OAuthClientInformationFull).client_name ?? (c as OAuthClientInformationFull).client_id), MAX_CLIENT_NAME),
      };
const fromStored = (p: StoredPending): Pending => ({
  ...p,
  client: clientRef(p.client),
  params: { ...p.params, resource: p.params.resource === undefined ? undefined : new URL(p.params.resource) },
});

export class WorkgraphOAuthProvider implements OAuthServerProvider {
  readonly clientsStore: Clients;
  /**
   * Pending authorizations, codes and consumed codes live in the global store `oauth` (files,
   * or PostgreSQL shared by every process in cluster mode): the authorize, sign-in, consent
   * and token requests of one flow may reach different processes.
   */
  private readonly pendings: Collection<StoredPending>;
  private readonly codes: Collection<Code>;
  private readonly usedCodes: Collection<UsedCode>;

  constructor(private readonly services: KernelServices) {
    const store = globalStore(services, 'oauth');
    this.clientsStore = new Clients(store, services);
    // one file per pending authorization: anyone can make one, so a write must not cost the size of all of them
    this.pendings = store.collection<StoredPending>('pending', { layout: 'file-per-key' });
    this.codes = store.collection<Code>('codes');
    this.usedCodes = store.collection<UsedCode>('used-codes');
  }

  private now(): number {
    return this.services.clock.now();
  }

  /** The resource every token is bound to: this server (REST and /mcp alike). */
  get resource(): string {
    return `${this.services.baseUrl}/`;
  }

  /** RFC 8707: a requested resource must be this server or a path under it. */
  resourceOf(requested: URL | undefined): string {
    if (!requested) return this.resource;
    const base = new URL(this.resource);
    if (requested.origin !== base.origin || requested.hash)
      throw new InvalidTargetError(`this server is the resource ${this.resource}; ${requested.href} is not`);
    return this.resource;
  }

  /** A live pending authorization (read through: another process may have made it). */
  async pendingOf(id: string): Promise<Pending | undefined> {
    if (id.length === 0 || id.length > 100) return undefined;
    // fresh: the sign-in step may have been served by another process a moment ago (cluster)
    const stored = await this.pendings.fetch(id, { fresh: true });
    return stored && stored.expires >= this.now() ? fromStored(stored) : undefined;
  }

  async savePending(pending: Pending): Promise<void> {
    await this.pendings.set(pending.id, toStored(pending));
  }

  async dropPending(id: string): Promise<void> {
    await this.pendings.delete(id);
  }

  /** The org of a code (cluster routing of the token request), without consuming it. */
  async orgOfCode(authorizationCode: string): Promise<string | null> {
    if (authorizationCode.length === 0 || authorizationCode.length > 200) return null;
    const key = sha256(authorizationCode);
    return (await this.codes.fetch(key))?.org ?? (await this.usedCodes.fetch(key))?.org ?? null;
  }

  private lastSweep = 0;

  /** Drops expired pending authorizations, codes and consumed-code markers (housekeeping nobody waits for), at most once a minute. */
  private sweep(force = false): void {
    const now = this.now();
    if (!force && now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    const drop = <T extends { expires: number }>(c: Collection<T>, graceMs: number) => {
      const dead: Array<{ key: string; value: null }> = [];
      for (const [key, v] of c.entries()) if (v.expires + graceMs < now) dead.push({ key, value: null });
      if (dead.length > 0)
        c.batch(dead).catch((err: unknown) =>
          this.services.log.warn('oauth sweep failed', { error: err instanceof Error ? err.message : String(err) }),
        );
    };
    drop(this.pendings, 0);
    drop(this.codes, 0);
    drop(this.usedCodes, USED_CODE_KEEP_MS);
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    this.resourceOf(params.resource);
    this.sweep();
    if (this.pendings.size >= MAX_PENDING) {
      this.sweep(true); // drops the expired ones from memory at once
      if (this.pendings.size >= MAX_PENDING) throw new TemporarilyUnavailableError('too many sign-ins in progress; try again in a minute');
    }
    const name = cut(client.client_name || client.client_id, MAX_CLIENT_NAME);
    const pending: Pending = {
      id: randomId(),
      csrf: randomId(),
      client: { id: client.client_id, name },
      params,
      expires: this.now() + PENDING_TTL_MS,
    };
    await this.savePending(pending);
    sendPage(res, pending, null, this.resource.startsWith('https:'));
  }

  /** A pending authorization approved by its signed-in person: a single-use code, back to the client. */
  async issueCode(pending: Pending): Promise<string> {
    const code = randomId();
    const who = pending.signedIn!;
    await this.codes.set(sha256(code), {
      clientId: pending.client.id,
      redirectUri: pending.params.redirectUri,
      challenge: pending.params.codeChallenge,
      resource: this.resourceOf(pending.params.resource),
      org: who.org,
      person: who.person,
      patHash: who.patHash,
      expires: this.now() + CODE_TTL_MS,
      used: false,
    });
    await this.pendings.delete(pending.id);
    return code;
  }

  private async code(client: OAuthClientInformationFull, authorizationCode: string): Promise<Code | undefined> {
    const code = await this.codes.fetch(sha256(authorizationCode));
    return code && code.clientId === client.client_id ? code : undefined;
  }

  private async usedCode(client: OAuthClientInformationFull, authorizationCode: string): Promise<UsedCode | undefined> {
    const used = await this.usedCodes.fetch(sha256(authorizationCode));
    return used && used.clientId === client.client_id ? used : undefined;
  }

  async challengeForAuthorizationCode(client: OAuthClientInformationFull, authorizationCode: string): Promise<string> {
    const challenge =
      (await this.code(client, authorizationCode))?.challenge ?? (await this.usedCode(client, authorizationCode))?.challenge;
    if (challenge === undefined) throw new InvalidGrantError('unknown authorization code');
    return challenge;
  }

  /** A replayed code: the grant it produced is revoked too (OAuth 2.1 section 4.1.3). */
  private async replayed(used: UsedCode | undefined): Promise<never> {
    const tenant = used ? this.services.tenants.get(used.org) : undefined;
    if (tenant && used) await revokeWithCascade(tenant, [used.grant], new Date(this.now()).toISOString());
    throw new InvalidGrantError('authorization code already used');
  }

  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    authorizationCode: string,
    _verifier?: string,
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const key = sha256(authorizationCode);
    if (!(await this.code(client, authorizationCode))) {
      const used = await this.usedCode(client, authorizationCode);
      if (used) return this.replayed(used);
      throw new InvalidGrantError('unknown authorization code');
    }
    // Consumed atomically (DELETE ... RETURNING in the store every process shares): of two
    // exchanges of one code exactly one gets it; the other is a replay.
    const code = await this.codes.take(key);
    if (!code) return this.replayed(await this.usedCode(client, authorizationCode));
    const grant = newTokenRecord(randomId(), {
      kind: 'oauth-grant',
      person: code.person,
      created: new Date(this.now()).toISOString(),
      label: client.client_id,
      audience: code.resource,
      parent: code.patHash,
      minted_by: 'oauth',
    });
    await this.usedCodes.set(key, {
      clientId: code.clientId,
      challenge: code.challenge,
      org: code.org,
      grant: grant.hash,
      expires: code.expires,
    });
    if (code.expires < this.now()) throw new InvalidGrantError('authorization code expired');
    if (redirectUri !== undefined && redirectUri !== code.redirectUri)
      throw new InvalidGrantError('redirect_uri does not match the authorization request');
    if (this.resourceOf(resource) !== code.resource) throw new InvalidTargetError('resource does not match the authorization request');
    const tenant = this.services.tenants.get(code.org);
    const pat = tenant?.tokens.find(code.patHash);
    if (!tenant || !pat || !isLive(pat, this.now())) throw new InvalidGrantError('the sign-in token is no longer valid');
    return this.mint(tenant, grant, [grant]);
  }

  /** A fresh access + refresh token pair under `grant` (records added in one locked write). */
  private async mint(tenant: Tenant, grant: TokenRecord, extra: TokenRecord[] = [], used?: string): Promise<OAuthTokens> {
    const created = new Date(this.now()).toISOString();
    const access = generateToken('oat');
    const refresh = generateToken('ort');
    const fields = { person: grant.person, created, label: grant.label, audience: grant.audience, parent: grant.hash, minted_by: 'oauth' };
    const accessRecord = newTokenRecord(access, {
      ...fields,
      kind: 'oauth-access',
      expires: new Date(this.now() + ACCESS_TTL_S * 1000).toISOString(),
    });
    const refreshRecord = newTokenRecord(refresh, {
      ...fields,
      kind: 'oauth-refresh',
      expires: new Date(this.now() + REFRESH_TTL_S * 1000).toISOString(),
    });
    await tenant.tokens.mutate((records) => {
      for (const r of [...extra, accessRecord, refreshRecord]) records.set(r.hash, r);
      if (used) {
        const old = records.get(used);
        if (old) old.revoked_at = created; // rotation: a refresh token works once
      }
    });
    this.services.tenants.indexTokens(tenant);
    return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TTL_S, refresh_token: refresh, scope: SCOPE };
  }

  /** The record of a token (by hash) and its tenant, whichever tenant holds it. */
  private locate(token: string): { tenant: Tenant; record: TokenRecord } | null {
    const hash = hashToken(token);
    for (const tenant of this.services.tenants.list()) {
      tenant.tokens.reload();
      const record = tenant.tokens.find(hash);
      if (record) return { tenant, record };
    }
    return null;
  }

  async exchangeRefreshToken(
    client: OAuthClientInformationFull,
    refreshToken: string,
    _scopes?: string[],
    resource?: URL,
  ): Promise<OAuthTokens> {
    const found = this.locate(refreshToken);
    if (!found || found.record.kind !== 'oauth-refresh' || found.record.label !== client.client_id)
      throw new InvalidGrantError('unknown refresh token');
    const { tenant, record } = found;
    const at = new Date(this.now()).toISOString();
    const grant = record.parent ? tenant.tokens.find(record.parent) : undefined;
    if (record.revoked_at !== null) {
      // reuse of a rotated refresh token: someone else may hold it; end the whole grant
      if (grant && grant.revoked_at === null) await revokeWithCascade(tenant, [grant.hash], at);
      throw new InvalidGrantError('refresh token already used; the grant is revoked');
    }
    if (!isLive(record, this.now())) throw new InvalidGrantError('refresh token expired');
    const pat = grant?.parent ? tenant.tokens.find(grant.parent) : undefined;
    if (!grant || grant.revoked_at !== null || !pat || !isLive(pat, this.now())) throw new InvalidGrantError('the grant was revoked');
    if (this.resourceOf(resource) !== grant.audience) throw new InvalidTargetError('resource does not match the grant');
    return this.mint(tenant, grant, [], record.hash);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const found = this.locate(token);
    if (!found || found.record.kind !== 'oauth-access' || !isLive(found.record, this.now()))
      throw new InvalidTokenError('invalid or expired access token');
    return {
      token,
      clientId: found.record.label ?? '',
      scopes: [SCOPE],
      expiresAt: found.record.expires ? Math.floor(Date.parse(found.record.expires) / 1000) : undefined,
      ...(found.record.audience ? { resource: new URL(found.record.audience) } : {}),
    };
  }

  /** RFC 7009: revoking a refresh token ends its grant; revoking an access token ends that token. Unknown tokens are fine. */
  async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    const found = this.locate(request.token);
    if (!found || found.record.label !== client.client_id) return;
    const { tenant, record } = found;
    const at = new Date(this.now()).toISOString();
    if (record.kind === 'oauth-refresh' && record.parent) await revokeWithCascade(tenant, [record.parent], at);
    else if (record.kind === 'oauth-access') await revokeWithCascade(tenant, [record.hash], at);
  }
}

/**
 * The CSP source naming a redirect URI's origin, or null where CSP cannot name it. Chromium
 * checks `form-action` against every redirect that answers a form submission too (CSP 3), so
 * the consent forms' 302 to the client needs its origin in the list. CSP's host grammar has no
 * IPv6 literals: an `http://[::1]` redirect URI gets null, and the answer to the form is a page
 * that navigates on (`returnPage`).
 */
export function formActionSource(redirectUri: string): string | null {
  let url: URL;
  try {
    url = new URL(redirectUri);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (!/^[A-Za-z0-9.-]+$/.test(url.hostname)) return null;
  return url.origin;
}

/** The consent pages' policy: nothing loads, forms post to this server or (its redirect) to the client's validated redirect URI only. */
export function consentCsp(redirectUri: string): string {
  const back = formActionSource(redirectUri);
  return `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${back ? ` ${back}` : ''}; frame-ancestors 'none'; base-uri 'none'`;
}

export function sendPage(res: Response, pending: Pending, step: { error?: string } | null, secure: boolean): void {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-security-policy', consentCsp(pending.params.redirectUri));
  res.setHeader('x-frame-options', 'DENY');
  res.cookie('svc_oauth_csrf', pending.csrf, { httpOnly: true, sameSite: 'strict', path: '/oauth', secure, maxAge: PENDING_TTL_MS });
  res
    .status(step?.error ? 401 : 200)
    .type('html')
    .send(consentPage(pending, step?.error ?? null));
}

export { InvalidClientError, InvalidRequestError };
