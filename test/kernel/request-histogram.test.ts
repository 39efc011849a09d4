/**
 * The request duration histogram kept outside prom-client (kernel/request-histogram.ts) prints
 * exactly what a prom-client Histogram prints for the same observations, in the text format and
 * as JSON, and a reset zeroes it.
 */
import { expect } from 'chai';
import { Histogram, Registry } from 'prom-client';
import { RequestHistogram } from '../../kernel/request-histogram.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LABELS = ['method', 'route', 'status'];

function pair(): { ours: RequestHistogram; theirs: Histogram<string>; a: Registry; b: Registry } {
  const a = new Registry();
  const b = new Registry();
  const ours = new RequestHistogram('x_duration_seconds', 'request "duration"\nby route', LABELS, BUCKETS, a);
  const theirs = new Histogram({
    name: 'x_duration_seconds',
    help: 'request "duration"\nby route',
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [b],
  });
  return { ours, theirs, a, b };
}

describe('request histogram', () => {
  it('prints what prom-client prints for the same observations (text and JSON), bucket edges included', async () => {
    const { ours, theirs, a, b } = pair();
    const series = [
      { method: 'GET', route: '/v1/nodes/:id', status: '200' },
      { method: 'POST', route: '/v1/nodes', status: '201' },
      { method: 'GET', route: 'a "quoted"\\route', status: '404' },
    ];
    const values = [0, 0.0005, 0.0004999, 0.00050001, 0.003, 0.01, 0.7, 10, 11, 250, 1e-9];
    values.forEach((v, i) => {
      for (const [j, labels] of series.entries()) {
        if ((i + j) % 3 === 2) continue;
        ours.child(labels).observe(v * (j + 1));
        theirs.observe(labels, v * (j + 1));
      }
    });
    expect(await a.metrics()).to.equal(await b.metrics());
    expect(await a.getMetricsAsJSON()).to.deep.equal(await b.getMetricsAsJSON());
    expect(await a.metrics()).to.include('x_duration_seconds_bucket{le="0.0005",method="GET",route="/v1/nodes/:id",status="200"} 3');
  });

  it('finds a series once per label set and counts into it; a reset zeroes every series', async () => {
    const { ours, a } = pair();
    const s = ours.child({ method: 'GET', route: '/r', status: '200' });
    expect(ours.child({ status: '200', route: '/r', method: 'GET' })).to.equal(s);
    s.observe(0.002);
    s.observe(0.2);
    expect(s.count).to.equal(2);
    expect(s.sum).to.be.closeTo(0.202, 1e-12);
    expect(await a.metrics()).to.include('x_duration_seconds_count{method="GET",route="/r",status="200"} 2');
    a.resetMetrics();
    expect(s.count).to.equal(0);
    expect(await a.metrics()).to.include('x_duration_seconds_count{method="GET",route="/r",status="200"} 0');
  });
});
