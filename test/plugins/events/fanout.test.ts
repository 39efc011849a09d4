import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { eventsPlugin } from '../../../plugins/events/index.js';
import { streamCounts } from '../../../plugins/events/slots.js';
import { configFromEnv } from '../../../kernel/config.js';
import { putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { openStream } from './helpers.js';
import { until } from '../../helpers/until.js';

const STREAMS = 200;

describe('events: fan-out to many open streams', function () {
  this.timeout(120_000);
  let t: TestServer;

  before(async () => {
    t = await startTestServer({
      plugins: [corePlugin, eventsPlugin],
      config: { events: { ...configFromEnv({}).events, streamsPerToken: STREAMS } },
    });
  });
  after(async () => t.close());

  it(`${STREAMS} streams each get a write's event once, within a second of it`, async () => {
    const streams: Array<Awaited<ReturnType<typeof openStream>>> = [];
    try {
      for (let i = 0; i < STREAMS; i += 20)
        streams.push(
          ...(await Promise.all(Array.from({ length: 20 }, () => openStream(t, '/v1/events?types=node.created', t.adminToken)))),
        );
      expect(streams.every((s) => s.status === 200)).to.equal(true);
      await until(() => streamCounts(t.server.services).byTenant.get(t.org) === STREAMS, 'every stream open', 10_000);
      const at = Date.now();
      await putNodes(t, [{ id: 'task-fanout', type: 'task', summary: 'to everyone' }]);
      const written = Date.now();
      await until(() => streams.every((s) => s.frames().length >= 1), 'every stream to get the event', 10_000);
      if (process.env.WG_PRINT_SIZES) console.log(`write ${written - at} ms, delivered to all ${Date.now() - written} ms after`);
      expect(Date.now() - written, 'from the acknowledged write to the last stream').to.be.below(1000);
      for (const s of streams) {
        expect(s.frames()).to.have.length(1);
        expect(JSON.parse(s.frames()[0]!.data!).nodes[0]).to.equal('task-fanout');
      }
    } finally {
      for (const s of streams) s.close();
    }
    await until(() => (streamCounts(t.server.services).byTenant.get(t.org) ?? 0) === 0, 'every slot released', 10_000);
  });
});
