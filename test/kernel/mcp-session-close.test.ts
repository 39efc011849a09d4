/**
 * A tenant closing in this process (cluster mode's hand-off or lost lease) ends its MCP
 * sessions at once, their GET notification streams included, instead of at the next sweep
 * (30 s): the client's next request gets 404 and it starts a new session at the new owner.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../helpers/harness.js';
import { until } from '../helpers/until.js';

/** This tenant's sessions on the server (with `open`: those whose notification stream is open), from the `workgraph_mcp_sessions` gauge. */
async function sessions(t: TestServer, open = false): Promise<number> {
  const text = await t.server.services.metrics.text();
  let n = 0;
  for (const m of text.matchAll(/^workgraph_mcp_sessions\{([^}]*)\} (\d+)$/gm)) {
    const labels = m[1] ?? '';
    if (labels.includes(`tenant="${t.org}"`) && (!open || labels.includes('stream="open"'))) n += Number(m[2]);
  }
  return n;
}

describe('MCP sessions: the tenant closes in this process', function () {
  this.timeout(30_000);
  let t: TestServer | null = null;

  after(async () => {
    await t?.close();
  });

  it('ends its sessions and their notification streams at once', async () => {
    // closing one tenant is cluster mode's move; one process's data-directory watcher would reopen it at once
    t = await startTestServer({ config: { tenantPollMs: 3_600_000 } });
    let streamEnded = false;
    const client = new Client({ name: 'closing', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${t.adminToken}` } },
        // the GET notification stream: note when its body ends
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if ((init?.method ?? 'GET') !== 'GET' || !res.ok || !res.body) return res;
          const [mine, theirs] = res.body.tee();
          void (async () => {
            const reader = mine.getReader();
            while (!(await reader.read().catch(() => ({ done: true }))).done) {
              /* reading */
            }
            streamEnded = true;
          })();
          return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
        },
      }),
    );
    try {
      await until(async () => (await sessions(t!, true)) === 1, 'the session and its notification stream', 5000);
      const closedAt = performance.now();
      await t.server.services.tenants.closeOne(t.org);
      await until(async () => (await sessions(t!)) === 0, 'the session to end', 5000);
      await until(() => streamEnded, 'the notification stream to end', 5000);
      expect(performance.now() - closedAt).to.be.lessThan(5000);
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});
