/**
 * Token bookkeeping over the kernel's per-tenant TokenStore: listing shapes (never the
 * plaintext, never a full hash), prefix resolution, and revocation with its cascade to
 * the OAuth grants derived from a token (records whose `parent` chain leads to it).
 */
import { hashPrefix, isLive, type TokenRecord } from '../../kernel/auth.js';
import { errors } from '../../kernel/errors.js';
import type { Tenant } from '../../kernel/tenant.js';

/** An OAuth grant: a token derived from another one (its `parent`). */
export function isGrant(record: TokenRecord): boolean {
  return record.parent !== null;
}

/** A personal access token proper: not an agent token, not a derived grant. */
export function isPersonalToken(record: TokenRecord): boolean {
  return record.kind === 'pat' && !isGrant(record);
}

export function isExpired(record: TokenRecord, nowMs: number): boolean {
  return record.expires !== null && Date.parse(record.expires) <= nowMs;
}

/** The token records as of now: re-reads the file first if the operator CLI changed it (one stat). */
export function currentRecords(tenant: Tenant): TokenRecord[] {
  tenant.tokens.reload();
  return tenant.tokens.all();
}

/**
 * The one unrevoked record among `candidates` whose hash starts with `prefix`:
 * none is 404 (`what` names it), several is 409.
 */
export function resolvePrefix(candidates: TokenRecord[], prefix: string, what: string): TokenRecord {
  const matches = candidates.filter((r) => r.revoked_at === null && r.hash.startsWith(prefix));
  if (matches.length === 0) throw errors.notFound(what, { hash_prefix: prefix });
  if (matches.length > 1) {
    throw errors.conflict(`hash prefix ${prefix} is ambiguous: it matches ${matches.length} tokens; give more characters`, {
      hash_prefix: prefix,
      matches: matches.length,
    });
  }
  return matches[0]!;
}

/**
 * Revokes the tokens with the given hashes and, transitively, every grant derived from
 * them, in one read-modify-write (resolves once durable). Returns how many of the named tokens and how
 * many derived grants were revoked (already revoked ones are not counted).
 */
export function revokeWithCascade(tenant: Tenant, hashes: string[], at: string): Promise<{ tokens: number; grants: number }> {
  return tenant.tokens.mutate((records) => {
    let tokens = 0;
    let grants = 0;
    const revokedSet = new Set<string>();
    for (const hash of hashes) {
      const r = records.get(hash);
      if (!r) continue;
      revokedSet.add(hash);
      if (r.revoked_at === null) {
        r.revoked_at = at;
        if (!isGrant(r)) tokens++;
        else if (r.kind !== 'oauth-access' && r.kind !== 'oauth-refresh') grants++;
      }
    }
    // Follow parent links until no new grant is found (grants of grants included).
    for (let grew = true; grew;) {
      grew = false;
      for (const r of records.values()) {
        if (r.parent === null || revokedSet.has(r.hash) || !revokedSet.has(r.parent)) continue;
        revokedSet.add(r.hash);
        grew = true;
        if (r.revoked_at === null) {
          r.revoked_at = at;
          // a grant's access and refresh tokens go with it; the count is of grants
          if (r.kind !== 'oauth-access' && r.kind !== 'oauth-refresh') grants++;
        }
      }
    }
    return { tokens, grants };
  });
}

export function personFields(tenant: Tenant, personId: string): { name: string | null; email: string | null } {
  const person = tenant.index.get(personId);
  if (!person || person.type !== 'person') return { name: null, email: null };
  return {
    name: String(person.frontmatter.name ?? person.title),
    email: typeof person.frontmatter.email === 'string' ? person.frontmatter.email : null,
  };
}

/** Own listing entry (docs/spec.md "Personal access token record"). */
export function ownEntry(tenant: Tenant, r: TokenRecord, nowMs: number) {
  const { name, email } = personFields(tenant, r.person);
  return {
    hash_prefix: hashPrefix(r.hash),
    person: r.person,
    label: r.label,
    name,
    email,
    created: r.created,
    expires: r.expires,
    expired: isExpired(r, nowMs),
    last_used: r.last_used,
  };
}

/** Team listing entry: the own entry without `label`; standing agent tokens also name their agent. */
export function teamEntry(tenant: Tenant, r: TokenRecord, nowMs: number) {
  const { label: _label, ...rest } = ownEntry(tenant, r, nowMs);
  return r.kind === 'agent-standing' ? { ...rest, agent: r.agent } : rest;
}

/** Agent token listing entry (standing tokens only). */
export function agentEntry(r: TokenRecord, nowMs: number) {
  return {
    hash_prefix: hashPrefix(r.hash),
    label: r.label,
    standing: true,
    created: r.created,
    expires: r.expires,
    expired: isExpired(r, nowMs),
    last_used: r.last_used,
    agent: r.agent,
    owner: r.person,
  };
}

export function byCreated(a: TokenRecord, b: TokenRecord): number {
  return a.created < b.created ? -1 : a.created > b.created ? 1 : a.hash < b.hash ? -1 : 1;
}

export { isLive };
