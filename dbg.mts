import { sharedPostgres, freshSchemaUrl } from './test/helpers/postgres.ts';
import { openDatabase } from './kernel/cluster/db.ts';
import { pgGlobalStore, pgOperational } from './kernel/cluster/pg-state.ts';
const url = await freshSchemaUrl((await sharedPostgres()).url);
const db = await openDatabase(url)
await db.pool.query("INSERT INTO wg_owners (org, owner, fence, expires_at) VALUES ('o', 'me', 1, now() + interval '1 hour')");
const { tokens } = await pgOperational(db, () => 1)('o', '/tmp');
const other = await openDatabase(url);
// await other.listen('wg_state', (p) => console.log('raw notice', p));
const a = pgGlobalStore(db, 'oauth'), b = pgGlobalStore(other, 'oauth');
const ca = a.collection('clients'), cb = b.collection('clients');
console.log(await cb.fetch('nobody'));
await ca.set('client-1', { id: 'client-1' });
console.log(await cb.fetch('client-1'));
await ca.set('client-2', { id: 'client-2' });
await new Promise((r) => setTimeout(r, 300));
console.log('cb has', cb.has('client-2'));
process.exit(0);
