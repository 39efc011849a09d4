/**
 * The event log's storage (kernel/events/log.ts): retention by count and by age through the
 * real server (SVC_EVENTS_MAX / SVC_EVENTS_RETENTION_DAYS as config), `firstId` following it;
 * reads older than the in-memory ring answered from the segment files; admins-only events
 * hidden by `matchesFilter` without `admin`.
 */
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { FileEventLog } from '../../../kernel/events/log.js';
import { matchesFilter, type NewEvent } from '../../../kernel/events/types.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

const DAY = 86_400_000;
const op = (i: number, extra: Partial<NewEvent> = {}): NewEvent => ({
  type: i % 2 ? 'lease.claimed' : 'lease.released',
  actor: null,
  nodes: [`task-${i}`],
  project: i % 3 === 0 ? 'web' : null,
  payload: { i },
  ...extra,
});

describe('events: retention and storage', function () {
  this.timeout(60_000);

  describe('through the server', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ plugins: [corePlugin], config: { eventsMax: 20, eventsRetentionDays: 2 } });
    });
    after(async () => t?.close());

    it('keeps a bounded number of events: the oldest segments go, firstId follows, reads start there', async () => {
      for (let i = 0; i < 6; i++) {
        const res = await t.api('POST', '/v1/nodes', {
          body: { nodes: Array.from({ length: 10 }, (_, j) => ({ id: `task-r${i}-${j}`, type: 'task', summary: `r ${i} ${j}` })) },
        });
        expect(res.status, res.text).to.equal(200);
      }
      const log = t.server.services.tenants.get(t.org)!.events;
      expect(log.lastId).to.be.at.least(60);
      expect(log.firstId).to.be.greaterThan(1);
      // at least maxEvents kept, at most a segment more (segments of maxEvents / 10)
      expect(log.lastId - log.firstId + 1).to.be.within(20, 22);
      const all = await log.read(0, undefined, 1000);
      expect(all[0]!.id).to.equal(log.firstId);
      expect(all.map((e) => e.id)).to.deep.equal(all.map((_, i) => log.firstId + i));
      const dir = join(t.dataDir, 'tenants', t.org, 'events');
      // segments (a closed one may briefly exist plain and gzipped while it is compressed, and a
      // segment pruned while its compression was writing keeps its gzipped copy until that
      // compression sees the prune and removes it)
      const segments = () => new Set(readdirSync(dir).flatMap((n) => /^(\d{12})\.jsonl(\.gz)?$/.exec(n)?.[1] ?? []));
      await until(() => segments().size <= 11, 'at most 11 event segments on disk', 15_000);
    });

    it('drops segments older than the retention days when the log moves on', async () => {
      const log = t.server.services.tenants.get(t.org)!.events;
      const before = log.firstId;
      t.clock.advance(3 * DAY);
      for (let i = 0; i < 3; i++) {
        const res = await t.api('POST', '/v1/nodes', { body: { nodes: [{ id: `task-late-${i}`, type: 'task', summary: 'late' }] } });
        expect(res.status, res.text).to.equal(200);
      }
      expect(log.firstId).to.be.greaterThan(before);
      const all = await log.read(0, undefined, 1000);
      expect(all.length).to.be.below(6);
      expect(all.every((e) => e.nodes[0]!.startsWith('task-late-'))).to.equal(true);
    });
  });

  describe('the log on its own', () => {
    let dir = '';
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('reads older than the ring come from the segments, across the ring boundary, filtered, after a reopen too', async () => {
      dir = mkdtempSync(join(tmpdir(), 'wg-evlog-'));
      const clock = new ManualClock();
      const opts = {
        dir,
        org: 'acme',
        fsync: true,
        clock,
        log: createLogger(() => undefined),
        retention: { maxEvents: 1000, maxAgeDays: 30 },
        ringSize: 16,
      };
      const log = FileEventLog.open(opts, null);
      const emitted = await Promise.all(Array.from({ length: 250 }, (_, i) => log.emit(op(i + 1))));
      expect(emitted.map((e) => e.id)).to.deep.equal(emitted.map((_, i) => i + 1));
      expect(readdirSync(dir).length).to.be.greaterThan(2);
      // the ring holds the newest ringSize events, cut back once it holds 64 more (not at every push)
      const ring = (log as unknown as { ring: Array<{ id: number }> }).ring;
      expect(ring.length).to.be.within(16, 16 + 64);
      expect(ring[ring.length - 1]!.id).to.equal(250);
      const check = async (l: FileEventLog) => {
        expect((await l.read(0, undefined, 1000)).map((e) => e.id)).to.deep.equal(emitted.map((e) => e.id));
        expect((await l.read(120, undefined, 5)).map((e) => e.id)).to.deep.equal([121, 122, 123, 124, 125]);
        expect((await l.read(230, undefined, 10)).map((e) => e.id)).to.deep.equal([231, 232, 233, 234, 235, 236, 237, 238, 239, 240]);
        const web = await l.read(0, { project: 'web', types: ['lease.*'] }, 1000);
        expect(web.map((e) => e.id)).to.deep.equal(emitted.filter((e) => e.project === 'web').map((e) => e.id));
        expect((await l.read(0, { node: 'task-77' })).map((e) => e.id)).to.deep.equal([77]);
        expect(await l.read(250)).to.deep.equal([]);
      };
      await check(log);
      await log.close();
      // closed segments are gzipped (once close has waited for them), the newest stays plain
      expect(readdirSync(dir).sort()).to.deep.equal(['000000000001.jsonl.gz', '000000000101.jsonl.gz', '000000000201.jsonl']);
      expect(statSync(join(dir, '000000000001.jsonl.gz')).mtime.toISOString()).to.equal(emitted[99]!.time);
      const again = FileEventLog.open(opts, null);
      expect(again.lastId).to.equal(250);
      await check(again);
      const next = await again.emit(op(251));
      expect(next.id).to.equal(251);
      await again.close();
      // a crash between the gzipped copy and the plain file's removal: the open keeps the gzipped one
      writeFileSync(join(dir, '000000000101.jsonl'), gunzipSync(readFileSync(join(dir, '000000000101.jsonl.gz'))));
      // and a power loss that took the newest segment's file: the gzipped one is the log's end
      rmSync(join(dir, '000000000201.jsonl'));
      const third = FileEventLog.open(opts, null);
      expect(readdirSync(dir).sort()).to.deep.equal(['000000000001.jsonl.gz', '000000000101.jsonl.gz', '000000000201.jsonl']);
      expect(third.lastId).to.equal(200);
      expect((await third.read(0, undefined, 1000)).map((e) => e.id)).to.deep.equal(emitted.slice(0, 200).map((e) => e.id));
      expect((await third.emit(op(201))).id).to.equal(201);
      await third.close();
    });

    it("cluster take-over (freshInode): a former owner still holding the segment open writes into an unlinked file, never into the new owner's log", async () => {
      dir = mkdtempSync(join(tmpdir(), 'wg-evlog-'));
      const opts = { dir, org: 'acme', fsync: false, clock: new ManualClock(), log: createLogger(() => undefined) };
      const former = FileEventLog.open(opts, null);
      await former.emit(op(1));
      await former.emit(op(2));
      const owner = FileEventLog.open({ ...opts, freshInode: true }, null);
      await former.emit(op(3)); // the former owner, fenced out, does not know yet
      const mine = await owner.emit(op(4));
      expect(mine.id).to.equal(3);
      await former.close();
      await owner.close();
      const reopened = FileEventLog.open(opts, null);
      expect((await reopened.read(0)).map((e) => [e.id, e.payload.i])).to.deep.equal([
        [1, 1],
        [2, 2],
        [3, 4],
      ]);
      await reopened.close();
    });

    it('admins-only events are hidden by matchesFilter unless the filter says admin', async () => {
      dir = mkdtempSync(join(tmpdir(), 'wg-evlog-'));
      const log = FileEventLog.open({ dir, org: 'acme', fsync: false, clock: new ManualClock(), log: createLogger(() => undefined) }, null);
      await log.emit(op(1));
      const admin = await log.emit({
        type: 'token.created',
        actor: null,
        nodes: [],
        project: null,
        audience: 'admins',
        payload: { hash_prefix: 'abcd' },
      });
      expect(matchesFilter(admin, undefined)).to.equal(false);
      expect(matchesFilter(admin, { types: ['token.*'] })).to.equal(false);
      expect(matchesFilter(admin, { admin: true })).to.equal(true);
      expect((await log.read(0)).map((e) => e.type)).to.deep.equal(['lease.claimed']);
      expect((await log.read(0, { admin: true })).map((e) => e.type)).to.deep.equal(['lease.claimed', 'token.created']);
      await log.close();
    });
  });
});
