// Probe (not a benchmark): heap composition of a started kernel on an N-node fixture.
import { writeHeapSnapshot } from 'node:v8';
import { benchConfig, fixture } from './lib.js';
import { startKernel } from '../../kernel/server.js';
import { createLogger } from '../../kernel/config.js';
import { allPlugins } from '../plugins.js';
import { timelinesOf } from '../../plugins/analytics/timeline.js';

const n = Number(process.env.N ?? 20000);
const f = await fixture(n);
const k = await startKernel({ config: benchConfig(f.dataDir, { fsync: false }), plugins: allPlugins, log: createLogger(undefined, true) });
const tenant = k.services.tenants.get(f.org)!;
await timelinesOf(tenant).ready();
await new Promise((r) => setTimeout(r, 3000));
(globalThis as { gc?: () => void }).gc?.();
console.log('rss MB', Math.round(process.memoryUsage().rss / 1e6), 'heap MB', Math.round(process.memoryUsage().heapUsed / 1e6));
console.log(writeHeapSnapshot(process.env.OUT ?? '/tmp/perf/heap.heapsnapshot'));
await k.close();
