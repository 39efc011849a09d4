import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { eventsPlugin } from '../../../plugins/events/index.js';
import { startTestServer, testServerConfig } from '../../helpers/harness.js';
import { httpBody, parseFrames, rawStream } from './helpers.js';
import { until } from '../../helpers/until.js';

const DAY = 86_400_000;

describe('events: a cursor before pruned events (retention)', function () {
  this.timeout(180_000);

  it('the stream says event: gap first and goes on from the oldest kept; JSON is 410 events_pruned', async () => {
    const first = await startTestServer({ plugins: [corePlugin, eventsPlugin], keepData: true });
    const { dataDir, adminToken, org } = first;
    let second: RunningServer | null = null;
    try {
      // more than one segment of the log (10,000 events each at the default retention), all old
      const tenant = first.server.services.tenants.get(org)!;
      for (let i = 0; i < 10_050; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            tenant.events.emit({ type: 'test.old', actor: null, nodes: [], project: null, payload: { n: i + j } }),
          ),
        );
      }
      await first.server.close();
      // a month later the oldest segment is past the retention age and goes when the log opens
      const clock = new ManualClock();
      clock.advance(40 * DAY);
      second = await startServer({
        config: await testServerConfig(dataDir),
        plugins: [corePlugin, eventsPlugin],
        clock,
        log: createLogger(() => undefined),
      });
      const log = second.services.tenants.get(org)!.events;
      expect(log.firstId, 'the oldest segment was pruned').to.be.above(1);

      const json = await fetch(`${second.url}/v1/events?since=5`, { headers: { authorization: `Bearer ${adminToken}` } });
      expect(json.status).to.equal(410);
      const body = (await json.json()) as any;
      expect(body.error).to.include({ code: 'events_pruned' });
      expect(body.error.details).to.deep.include({ since: 5, first_id: log.firstId, resume_since: log.firstId - 1 });
      const resumed = await fetch(`${second.url}/v1/events?since=${body.error.details.resume_since}&limit=1`, {
        headers: { authorization: `Bearer ${adminToken}` },
      });
      expect(((await resumed.json()) as any).events[0].id).to.equal(log.firstId);

      const t2 = { url: second.url } as Parameters<typeof rawStream>[0];
      const s = rawStream(t2, '/v1/events?since=5&types=test.old', adminToken);
      s.socket.resume();
      await until(() => parseFrames(httpBody(s.received())).length >= 2, 'the gap and the first kept event', 10_000);
      const [gap, next] = parseFrames(httpBody(s.received()));
      expect(gap!.event).to.equal('gap');
      expect(JSON.parse(gap!.data!)).to.deep.equal({ since: 5, first_id: log.firstId, resume_id: log.firstId - 1 });
      expect(gap!.id).to.equal(String(log.firstId - 1));
      expect(next!.id).to.equal(String(log.firstId));
      s.socket.destroy();
    } finally {
      await first.server.close();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
