/**
 * The identity-provider adapter of docs/design.md §7 (`SVC_IDP_URL`): a small HTTP client for
 * organization memberships (GET /v1/me/org-choices) and person invitations
 * (POST /v1/admin/people with `invite: true`). The wire API it speaks is documented in
 * this plugin's README; test/helpers/fake-idp.ts implements it on loopback.
 */
import { errors } from '../../kernel/errors.js';
import type { OpContext } from '../../kernel/plugin.js';
import { ORG_PATTERN } from '../../kernel/tenants.js';
import type { OrgChoicesProvider } from '../core/public.js';

/** How long one provider call may take before it counts as unreachable. */
const IDP_TIMEOUT_MS = 5000;

export interface IdpOrg {
  slug: string;
  name: string;
}

export interface InvitationRequest {
  email: string;
  name: string;
  org: string | null;
  connection_id: string | null;
  invited_by: string;
}

export interface IssuedInvitation {
  id: string;
  org: string | null;
  connection_id: string | null;
}

/** A provider call that did not give a usable answer: unreachable, non-2xx, or a malformed body. */
export class IdpCallError extends Error {}

function endpoint(base: string, path: string): URL {
  return new URL(path, base.endsWith('/') ? base : `${base}/`);
}

async function call(base: string, path: string, init: RequestInit): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(endpoint(base, path), { ...init, signal: AbortSignal.timeout(IDP_TIMEOUT_MS) });
  } catch (err) {
    throw new IdpCallError(
      `identity provider unreachable: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
    );
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

function providerMessage(status: number, body: unknown): string {
  const err = body && typeof body === 'object' ? (body as { error?: { message?: unknown; code?: unknown } }).error : undefined;
  const detail = err && (typeof err.message === 'string' ? err.message : typeof err.code === 'string' ? err.code : undefined);
  return `identity provider answered ${status}${detail ? `: ${detail}` : ''}`;
}

/** The organizations the provider knows this email to be a member of. */
export async function listMemberships(base: string, email: string): Promise<IdpOrg[]> {
  const { status, body } = await call(base, `v1/memberships?email=${encodeURIComponent(email)}`, {
    method: 'GET',
    headers: { accept: 'application/json' },
  });
  if (status !== 200) throw new IdpCallError(providerMessage(status, body));
  const orgs = body && typeof body === 'object' ? (body as { orgs?: unknown }).orgs : undefined;
  if (!Array.isArray(orgs)) throw new IdpCallError('identity provider answered without an orgs list');
  const out: IdpOrg[] = [];
  for (const o of orgs) {
    const slug = o && typeof o === 'object' ? (o as { slug?: unknown }).slug : undefined;
    const name = o && typeof o === 'object' ? (o as { name?: unknown }).name : undefined;
    // An entry this server could never route to is dropped rather than echoed to clients.
    if (typeof slug !== 'string' || !ORG_PATTERN.test(slug)) continue;
    out.push({ slug, name: typeof name === 'string' && name.trim() ? name : slug });
  }
  return out;
}

export async function issueInvitation(base: string, request: InvitationRequest): Promise<IssuedInvitation> {
  const { status, body } = await call(base, 'v1/invitations', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(request),
  });
  if (status !== 200 && status !== 201) throw new IdpCallError(providerMessage(status, body));
  const id = body && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
  if (typeof id !== 'string' || id === '') throw new IdpCallError('identity provider answered without an invitation id');
  const b = body as { org?: unknown; connection_id?: unknown };
  return {
    id,
    org: typeof b.org === 'string' ? b.org : request.org,
    connection_id: typeof b.connection_id === 'string' ? b.connection_id : request.connection_id,
  };
}

/**
 * The org-choices provider registered into core's list. It is stateless (reads the
 * provider URL from the request's own kernel services), so several kernels in one
 * process (tests) never see each other's configuration. `null` leaves the answer to
 * core (`source: bound`): no provider configured, the identity plugin disabled for the
 * tenant, or a caller with no person email to enumerate.
 */
export const idpOrgChoices: OrgChoicesProvider = async (ctx: OpContext) => {
  const base = ctx.services.config.idpUrl;
  if (!base) return null;
  const plugin = ctx.services.host.plugins.find((p) => p.name === 'identity');
  if (!plugin || !ctx.services.host.usable(ctx.tenant, plugin)) return null;
  if (!ctx.actor.bound || !ctx.actor.email) return null;
  let orgs: IdpOrg[];
  try {
    orgs = await listMemberships(base, ctx.actor.email);
  } catch (err) {
    if (err instanceof IdpCallError)
      throw errors.badGateway('membership_requery_failed', `could not re-query organization memberships: ${err.message}`);
    throw err;
  }
  return {
    org_choices: orgs.map((o) => ({ slug: o.slug, label: o.name, ...(o.slug === ctx.tenant.org ? { default: true } : {}) })),
    source: 'idp',
  };
};
