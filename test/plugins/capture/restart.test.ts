/**
 * The capture plugin's operational state is durable: after a restart an idempotency key still
 * returns the original answer, the journal still holds its entries, and the digest's search
 * index is rebuilt from the reloaded graph.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { capturePlugin } from '../../../plugins/capture/index.js';
import { readCaptureJournal } from '../../../plugins/capture/journal.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { startTestServer, testServerConfig } from '../../helpers/harness.js';

async function post(server: RunningServer, path: string, token: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

describe('capture: durability across a restart', function () {
  this.timeout(30_000);

  it('idempotency records and journal entries survive; the digest finds captured nodes', async () => {
    const first = await startTestServer({ plugins: [corePlugin, capturePlugin], keepData: true });
    const { dataDir, adminToken, org } = first;
    let second: RunningServer | null = null;
    try {
      const original = await first.api('POST', '/v1/capture', {
        body: { text: 'task: Durable zeppelin launch', idempotency_key: 'durable-1' },
      });
      expect(original.status, original.text).to.equal(200);
      await first.api('POST', '/v1/distill/report', { body: { facts: 2 } });
      await first.close();

      const config = await testServerConfig(dataDir);
      second = await startServer({
        config,
        plugins: [corePlugin, capturePlugin],
        clock: new ManualClock(),
        log: createLogger(() => undefined),
      });
      const replay = await post(second, '/v1/capture', adminToken, { text: 'task: Durable zeppelin launch', idempotency_key: 'durable-1' });
      expect(replay.text).to.equal(original.text);
      const tenant = second.services.tenants.get(org)!;
      expect(tenant.index.idsOfType('task').size).to.equal(1);
      const entries = readCaptureJournal(tenant, { untilMs: Date.now() + 60_000 });
      expect(entries.map((e) => `${e.kind}:${e.status}`)).to.deep.equal(['capture:created', 'distill_report:reported']);
      const digest = await post(second, '/v1/digest', adminToken, { query: 'zeppelin' });
      expect(JSON.parse(digest.text).text).to.include('## task-durable-zeppelin-launch [');
    } finally {
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
