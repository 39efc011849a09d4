import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { eventsPlugin } from '../../../plugins/events/index.js';
import { streamCounts } from '../../../plugins/events/slots.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { emit, httpBody, parseFrames, rawStream } from './helpers.js';
import { until } from '../../helpers/until.js';

const BUFFER_EVENTS = 50;
const BUFFER_BYTES = 256 * 1024;

describe('events: a client that does not read is cut with its resume id; memory stays bounded', function () {
  this.timeout(120_000);
  let t: TestServer;

  before(async () => {
    t = await startTestServer({
      plugins: [corePlugin, eventsPlugin],
      config: {
        events: {
          heartbeatMs: 60_000,
          streamsPerToken: 10,
          streamsPerTenant: 10,
          bufferEvents: BUFFER_EVENTS,
          bufferBytes: BUFFER_BYTES,
          cutGraceMs: 3000,
        },
      },
    });
  });
  after(async () => t.close());

  it('the stalled stream is cut: a reader that comes back gets event: overflow with the id to resume from; one that never does is disconnected', async () => {
    const counts = streamCounts(t.server.services);
    const open = () => counts.byTenant.get(t.org) ?? 0;
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    const late = rawStream(t, `/v1/events?since=${start}`, t.adminToken);
    const never = rawStream(t, `/v1/events?since=${start}`, t.adminToken);
    await until(() => open() === 2, 'both streams open', 5000);

    // large events until both are cut: far more than the socket buffers, the response's and the queue
    const filler = 'x'.repeat(8 * 1024);
    let emitted = 0;
    const cutBefore = counts.cut;
    while (counts.cut < cutBefore + 2) {
      await emit(t, { type: 'test.filler', payload: { filler, n: emitted } });
      emitted++;
      if (emitted > 20_000) throw new Error('no cut after 20,000 events of 8 KB');
    }
    const sentBytes = emitted * filler.length;
    expect(sentBytes, 'the cut came only once more than the queue holds was waiting').to.be.above(BUFFER_BYTES);

    // the reader comes back: everything handed to its socket, then the overflow event, then the end
    late.socket.resume();
    await until(() => late.socket.readableEnded || late.socket.destroyed, 'the cut stream to end', 10_000);
    const frames = parseFrames(httpBody(late.received()));
    const overflow = frames.find((f) => f.event === 'overflow');
    expect(overflow, 'the final event is overflow').to.not.equal(undefined);
    expect(frames.at(-1)).to.equal(overflow);
    const resumeId = Number(overflow!.id);
    expect(JSON.parse(overflow!.data!)).to.include({ resume_id: resumeId });
    const fillers = frames.filter((f) => f.event === 'test.filler').map((f) => Number(f.id));
    expect(fillers.length).to.be.above(0).and.below(emitted, 'the stream was cut before the end');
    expect(fillers.at(-1)).to.equal(resumeId, 'the resume id is the last event the client got');
    expect(fillers).to.deep.equal(
      Array.from({ length: fillers.length }, (_, i) => fillers[0]! + i),
      'contiguous, none skipped',
    );

    // resuming from it gives the rest, none missing
    const rest = await t.api('GET', `/v1/events?since=${resumeId}&types=test.filler&limit=500`);
    expect(rest.body.events[0].id).to.equal(resumeId + 1);

    // the one that never reads is disconnected after the grace period: its slot is freed
    await until(() => open() === 0, 'the stalled connection to be closed', 20_000);
    never.socket.destroy();
    // bounded: no stream ever queued more than its buffer and one event
    expect(counts.peakQueuedBytes)
      .to.be.above(0)
      .and.at.most(BUFFER_BYTES + 2 * filler.length);
  });
});
