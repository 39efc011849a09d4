/**
 * The app's cluster router (plugins/app/router.ts): a request another member forwarded here is
 * routed by the session record as the table has it (`fresh`), not by this process's copy, so
 * two members holding different stale copies of a session cannot pass its requests between them
 * (test/cluster/routing.test.ts saw "tenant beta is moving between processes" for a whole wait).
 */
import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';
import type { KernelServices } from '../../../kernel/plugin.js';
import { appRouter } from '../../../plugins/app/router.js';

describe('app: the cluster router reads the session afresh for a forwarded request', () => {
  const cookie = 'a'.repeat(43);
  const key = createHash('sha256').update(cookie).digest('hex');
  // this process's copy says `local`; the table (a fresh read) says `beta`
  const reads: Array<{ fresh: boolean }> = [];
  const collection = {
    fetch: async (k: string, opts?: { fresh?: boolean }) => {
      reads.push({ fresh: opts?.fresh === true });
      if (k !== key) return undefined;
      return { current: opts?.fresh ? 'beta' : 'local', expires_ms: Date.now() + 60_000, tokens: {} };
    },
  };
  const services = {
    globalStore: () => ({ collection: () => collection }),
    clock: { now: () => Date.now() },
    tenants: { options: { operational: {} }, get: () => undefined },
    config: { dataDir: '/nonexistent' },
  } as unknown as KernelServices;
  const router = appRouter(services);
  const request = (headers: Record<string, string>) =>
    ({
      method: 'GET',
      url: '/app/nodes/task-1',
      headers: { cookie: `svc_app_session=${cookie}`, ...headers },
    }) as unknown as IncomingMessage;

  it('uses the copy for a request from a client, the table for one a member forwarded', async () => {
    const direct = request({});
    expect(router.applies(direct)).to.equal('headers');
    expect(await router.route(direct, null, { fresh: false })).to.deep.equal({ org: 'local' });
    expect(await router.route(request({ 'x-workgraph-hop': '1' }), null, { fresh: true })).to.deep.equal({ org: 'beta' });
    expect(reads).to.deep.equal([{ fresh: false }, { fresh: true }]);
  });
});
