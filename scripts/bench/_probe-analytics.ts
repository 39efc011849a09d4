// Probe (not a benchmark): computeAnalytics in-process on a fixture, repeated and right after a write.
import { benchConfig, fixture, nowMs } from './lib.js';
import { startKernel } from '../../kernel/server.js';
import { createLogger } from '../../kernel/config.js';
import { allPlugins } from '../plugins.js';
import { timelinesOf } from '../../plugins/analytics/timeline.js';
import { computeAnalytics } from '../../plugins/analytics/report.js';

const n = Number(process.env.N ?? 100000);
const f = await fixture(n);
const k = await startKernel({ config: benchConfig(f.dataDir, { fsync: false }), plugins: allPlugins, log: createLogger(undefined, true) });
const tenant = k.services.tenants.get(f.org)!;
const tl = timelinesOf(tenant);
await tl.ready();
const types = [...tenant.registry.nodeTypes.values()]
  .filter((t) => t.queueable)
  .map((t) => t.type)
  .sort();
const run = () => {
  const t0 = nowMs();
  computeAnalytics(tenant, tl, { project: null, types, weeks: 12, top: 10, aging: 14 }, Date.now());
  return nowMs() - t0;
};
console.log(`first ${run().toFixed(1)} ms; repeated ${[run(), run(), run()].map((x) => x.toFixed(1)).join(', ')} ms`);
const actor = { personId: f.person, name: 'Probe', email: 'probe@localhost', agent: null, session: null };
for (let i = 0; i < 3; i++) {
  await tenant.write(actor, { op: 'probe', via: 'rest' }, async (draft) => {
    draft.put({ frontmatter: { id: `task-probe-${i}`, type: 'task', summary: `probe ${i}` }, body: '' });
  });
  console.log(`after a write: ${run().toFixed(1)} ms`);
}
await k.close();
