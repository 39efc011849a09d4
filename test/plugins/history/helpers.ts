import type { Tenant } from '../../../kernel/tenant.js';
import type { DraftNode, WriteMeta } from '../../../kernel/write-draft.js';
import type { TestServer } from '../../helpers/harness.js';

export function tenantOf(t: TestServer): Tenant {
  return t.server.services.tenants.get(t.org)!;
}

/** A write straight through the tenant's write path as the bootstrap admin (server-internal writes, bulk set-up). */
export async function directWrite(
  t: TestServer,
  meta: WriteMeta,
  fn: (draft: {
    get: (id: string) => (DraftNode & { revision: string | null }) | null;
    put: (n: DraftNode) => void;
    delete: (id: string) => void;
  }) => void | Promise<void>,
): Promise<void> {
  const tenant = tenantOf(t);
  const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
  await tenant.write(actor, meta, async (draft) => {
    await fn(draft);
  });
}

/** GET and expect 200, returning the parsed body. */
export async function ok<T = any>(t: TestServer, path: string, token?: string): Promise<T> {
  const res = await t.api('GET', path, { token });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
  return res.body as T;
}

/**
 * These tests are not about hook limits, and the machines they run on are shared and busy:
 * a cold sandbox can miss the default 50 ms hook budget and turn a set-up write into a
 * spurious 409. Give this test tenant's hooks a generous budget.
 */
export function relaxHookTimeout(t: TestServer): void {
  tenantOf(t).config.limits.hook_timeout_ms = 2000;
}
