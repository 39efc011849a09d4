/**
 * Shared set-up for the identity plugin tests: a server with core + identity, people and
 * agents created through the real routes, and the few fixtures no route can make (a
 * token bound to no person node, an OAuth grant derived from a token).
 */
import { expect } from 'chai';
import { generateToken, hashToken, newTokenRecord } from '../../../kernel/auth.js';
import type { ServerConfig } from '../../../kernel/config.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { identityPlugin } from '../../../plugins/identity/index.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';

export const plugins = [corePlugin, identityPlugin];

export function startIdentityServer(config: Partial<ServerConfig> = {}): Promise<TestServer> {
  return startTestServer({ plugins, config });
}

let seq = 0;

/** Creates a person through POST /v1/admin/people and mints a PAT for them through POST /v1/admin/tokens. */
export async function createPerson(
  t: TestServer,
  name: string,
  opts: { adminToken?: string; email?: string } = {},
): Promise<{ id: string; token: string; email: string }> {
  const token = opts.adminToken ?? t.adminToken;
  const email = opts.email ?? `${name.toLowerCase().replace(/[^a-z0-9]+/g, '.')}.${++seq}@example.test`;
  const created = await t.api('POST', '/v1/admin/people', { token, body: { name, email } });
  expect(created.status, created.text).to.equal(201);
  const minted = await t.api('POST', '/v1/admin/tokens', { token, body: { person: created.body.id } });
  expect(minted.status, minted.text).to.equal(201);
  return { id: created.body.id, token: minted.body.token, email };
}

/** Creates an agent owned by the caller through POST /v1/agents. */
export async function createAgent(t: TestServer, token: string, label: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.api('POST', '/v1/agents', { token, body: { label, ...extra } });
  expect(res.status, res.text).to.equal(201);
  return res.body.id as string;
}

/** Mints a per-session agent token (session deferred unless given). */
export async function sessionToken(t: TestServer, ownerToken: string, agent: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await t.api('POST', `/v1/agents/${agent}/token`, { token: ownerToken, body });
  expect(res.status, res.text).to.equal(201);
  return res.body.token as string;
}

export async function standingToken(
  t: TestServer,
  ownerToken: string,
  agent: string,
  body: Record<string, unknown> = {},
): Promise<{ token: string; hash_prefix: string }> {
  const res = await t.api('POST', `/v1/agents/${agent}/token`, { token: ownerToken, body: { standing: true, ...body } });
  expect(res.status, res.text).to.equal(201);
  return { token: res.body.token, hash_prefix: res.body.hash_prefix };
}

/**
 * A PAT bound to a person id with no person node (what an operator can mint with the CLI
 * for someone not yet created): the token authenticates but `bound` is false.
 */
export async function unboundToken(t: TestServer, org = t.org): Promise<string> {
  const tenant = t.server.services.tenants.get(org)!;
  const token = generateToken('pat');
  await tenant.tokens.mutate((records) => {
    const rec = newTokenRecord(token, {
      kind: 'pat',
      person: 'person-nobody-here',
      created: new Date(t.clock.now()).toISOString(),
      label: 'cli',
    });
    records.set(rec.hash, rec);
  });
  return token;
}

/**
 * An OAuth grant (`svc_oat_`) derived from `parentToken`, as the OAuth routes would record
 * it: same person, `parent` = the hash of the token it was minted from.
 */
export async function oauthGrant(t: TestServer, parentToken: string, org = t.org): Promise<string> {
  const tenant = t.server.services.tenants.get(org)!;
  const parentHash = hashToken(parentToken);
  const parent = tenant.tokens.find(parentHash);
  if (!parent) throw new Error('parent token not found');
  const grant = generateToken('pat').replace(/^svc_pat_/, 'svc_oat_');
  await tenant.tokens.mutate((records) => {
    const rec = newTokenRecord(grant, {
      kind: 'pat',
      person: parent.person,
      agent: parent.agent,
      created: new Date(t.clock.now()).toISOString(),
      parent: parentHash,
      minted_by: 'oauth',
    });
    records.set(rec.hash, rec);
  });
  return grant;
}

export const DAY_MS = 24 * 60 * 60 * 1000;

/** Asserts the docs/spec.md error envelope with the given status and code. */
export function expectError(res: { status: number; body: any; text: string }, status: number, code?: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.body, res.text).to.have.property('error');
  expect(res.body.error).to.have.all.keys('code', 'message', 'details');
  if (code) expect(res.body.error.code, res.text).to.equal(code);
}
