import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { EventSource } from 'eventsource';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { eventsPlugin } from '../../../plugins/events/index.js';
import { md, startTestServer, testServerConfig } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

describe('events: an eventsource client resumes with Last-Event-ID across a server restart', function () {
  this.timeout(90_000);

  it('sees every event after its id exactly once: those written while it was away, and the live ones after', async () => {
    const first = await startTestServer({ plugins: [corePlugin, eventsPlugin], keepData: true });
    const { dataDir, adminToken, url } = first;
    const port = first.server.port;
    let second: RunningServer | null = null;
    const got: Array<{ id: number; node: string }> = [];
    const lastEventIds: string[] = [];
    let base = url;
    const es = new EventSource(`${url}/v1/events?types=node.created`, {
      // the same URL after the restart (same port); the header carries the token, as a CLI or agent would
      fetch: (input, init) => {
        lastEventIds.push(String((init.headers as Record<string, string>)['Last-Event-ID'] ?? ''));
        return fetch(String(input).replace(url, base), {
          ...init,
          headers: { ...init.headers, authorization: `Bearer ${adminToken}` },
        });
      },
    });
    es.addEventListener('node.created', (e) => got.push({ id: Number(e.lastEventId), node: JSON.parse(e.data).nodes[0] }));
    const put = async (server: string, id: string) => {
      const res = await fetch(`${server}/v1/nodes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ nodes: [md({ id, type: 'task', summary: id })] }),
      });
      expect(res.status, await res.text()).to.equal(200);
    };
    try {
      await until(() => es.readyState === EventSource.OPEN, 'the stream to open', 5000);
      for (const id of ['task-r1', 'task-r2', 'task-r3']) await put(url, id);
      await until(() => got.length === 3, 'the first three events', 10_000);
      const lastBefore = got[2]!.id;

      await first.server.close();
      second = await startServer({
        config: await testServerConfig(dataDir, { port }),
        plugins: [corePlugin, eventsPlugin],
        clock: new ManualClock(),
        log: createLogger(() => undefined),
      });
      base = second.url;
      // written while the client is still away (it retries every few seconds): it catches up on them
      for (const id of ['task-r4', 'task-r5']) await put(second.url, id);
      await until(() => got.length === 5, 'the events written while away', 20_000);
      expect(lastEventIds.at(-1)).to.equal(String(lastBefore), 'the reconnect sent the last id it saw');
      for (const id of ['task-r6', 'task-r7']) await put(second.url, id);
      await until(() => got.length === 7, 'the live events after the reconnect', 10_000);

      expect(got.map((g) => g.node)).to.deep.equal(['task-r1', 'task-r2', 'task-r3', 'task-r4', 'task-r5', 'task-r6', 'task-r7']);
      const idsSeen = got.map((g) => g.id);
      expect(new Set(idsSeen).size).to.equal(idsSeen.length, 'no event twice');
      expect(idsSeen).to.deep.equal(
        [...idsSeen].sort((a, b) => a - b),
        'in id order',
      );
      expect(got[3]!.id).to.be.above(lastBefore);
    } finally {
      es.close();
      await first.server.close();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
