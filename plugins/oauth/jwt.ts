/**
 * Connector JWTs: accepted when signed by the configured issuer (SVC_JWT_ISSUER) for the
 * configured audience (SVC_JWT_AUDIENCE), with keys from SVC_JWT_JWKS_URL (fetched and cached
 * by jose) or an inline SVC_JWT_JWKS. jose checks the signature, `iss`, `aud`, `exp` and `nbf`.
 * The `org` claim must name a tenant of this server (a foreign org is a 401); `sub` (a person id
 * of that tenant) or `email` maps the token to a person. No JWT configuration: no authenticator.
 */
import { createHash } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { newTokenRecord } from '../../kernel/auth.js';
import type { KernelServices } from '../../kernel/plugin.js';
import { actorFor } from '../../kernel/tenants.js';

export function connectorJwtAuthenticator(services: KernelServices): KernelServices['bearerAuthenticators'][number] | null {
  const { jwtIssuer, jwtAudience, jwtJwksUrl, jwtJwks } = services.config;
  if (!jwtIssuer || !jwtAudience || (!jwtJwksUrl && !jwtJwks)) return null;
  const keys: JWTVerifyGetKey = jwtJwksUrl ? createRemoteJWKSet(new URL(jwtJwksUrl)) : createLocalJWKSet(JSON.parse(jwtJwks!));
  return async (token) => {
    let claims: Record<string, unknown>;
    try {
      const verified = await jwtVerify(token, keys, {
        issuer: jwtIssuer,
        audience: jwtAudience,
        clockTolerance: 5,
        currentDate: new Date(services.clock.now()),
      });
      claims = verified.payload as Record<string, unknown>;
    } catch {
      return null;
    }
    const org = typeof claims.org === 'string' ? claims.org : null;
    const tenant = org ? services.tenants.get(org) : undefined;
    if (!tenant) return null;
    let person: string | null = null;
    if (typeof claims.sub === 'string' && tenant.index.get(claims.sub)?.type === 'person') person = claims.sub;
    else if (typeof claims.email === 'string') {
      const wanted = claims.email.trim().toLowerCase();
      for (const id of tenant.index.idsOfType('person')) {
        const email = tenant.index.get(id)!.frontmatter.email;
        if (typeof email === 'string' && email.trim().toLowerCase() === wanted) person = id;
      }
    }
    if (!person) return null;
    // an in-memory record: connector JWTs are never stored; its hash only names it
    const record = newTokenRecord(token, {
      kind: 'connector-jwt',
      person,
      created: new Date(services.clock.now()).toISOString(),
      label: `connector jwt ${createHash('sha256').update(String(claims.iss)).digest('hex').slice(0, 8)}`,
      minted_by: 'connector-jwt',
    });
    return { tenant, actor: actorFor(tenant, record) };
  };
}
