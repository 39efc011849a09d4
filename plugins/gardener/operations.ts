/**
 * The gardener sweep (docs/spec.md Writes: POST /v1/gardener, rule 13; docs/design.md §9): runs the five
 * checks over the graph and keeps exactly one open `finding-` node per (check, node) whose
 * condition holds, linked by a `concerns` edge; a finding whose condition no longer holds is
 * resolved in the same run. Findings are written with `authored_via: gardener` as internal
 * commits attributed to the person who ran the sweep.
 */
import { createHash } from 'node:crypto';
import { isSvcError } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { DraftNode, WriteDraft } from '../../kernel/write-draft.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { leasesOf } from '../leases/public.js';
import type { RunGardenerOutput } from './schemas.js';
import { conditionsOf, isCheckName, type CheckEnv, type CheckName, type Condition } from './checks.js';

const ID_MAX = 200;

const EXPLAIN: Record<CheckName, string> = {
  'lagging-resolution':
    'A live inbound resolves/answers edge outranks the status field, so the node counts as done while its status says otherwise.',
  'dangling-edge': 'An edge points at a node that does not exist (deleted, renamed or mistyped).',
  'stale-assignment': 'The node is assigned, but nobody has held a live lease on it for longer than the grace window.',
  'superseded-open': 'A newer node supersedes this one, but its status was never closed.',
  'overdue-block': 'The node blocks work whose needed_by date has passed, and it is still open.',
};

const keyOf = (check: string, subject: string) => `${check}\u0000${subject}`;

/** The finding's (check, subject) when it is one the gardener keeps: a known check and a `concerns` edge. */
function findingKey(record: NodeRecord): { check: CheckName; subject: string } | null {
  const check = record.frontmatter.check;
  const subject = record.edges.find((e) => e.type === 'concerns')?.to;
  return isCheckName(check) && subject ? { check, subject } : null;
}

/** `finding-<check>-<subject>`, shortened with a hash when it would pass the id limit. */
function baseIdOf(check: CheckName, subject: string): string {
  const id = `finding-${check}-${subject}`;
  if (id.length <= ID_MAX) return id;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 10);
  return `${id.slice(0, ID_MAX - 11).replace(/-+$/, '')}-${hash}`;
}

function body(c: Condition): string {
  return `${EXPLAIN[c.check]}\n\nFiled by the gardener (POST /v1/gardener); the next run resolves it once the condition no longer holds.\n`;
}

interface Change {
  id: string;
  node: DraftNode;
  outcome: 'filed' | 'resolved' | 'refreshed';
}

export async function runGardener(ctx: OpContext): Promise<Static<typeof RunGardenerOutput>> {
  const actor = writeActorOf(ctx.actor);
  const { tenant, services } = ctx;
  const leasesPlugin = services.host.plugins.find((p) => p.name === 'leases');
  const leasesOn = leasesPlugin !== undefined && services.host.usable(tenant, leasesPlugin);

  // Runs inside the write queue so the sweep sees one consistent graph and two sweeps never
  // interleave (no duplicate findings).
  return tenant.write(actor, { op: 'gardener', via: 'gardener', internal: true }, async (draft) => {
    const nowMs = services.clock.now();
    const now = new Date(nowMs).toISOString();
    const { index } = tenant;
    const leases = leasesOn ? leasesOf(tenant) : null;
    const env: CheckEnv = {
      tenant,
      nowMs,
      graceWindowMs: tenant.config.limits.grace_window_ms,
      leaseOf: leases ? (id) => leases.get(id) : null,
    };

    // A full O(nodes) scan on purpose: POST /v1/gardener is an explicit maintenance sweep,
    // not a per-request read, and several checks (dangling edges, stale leases, passed
    // dates) change with time or with deletions that no commit event points at.
    const wanted = new Map<string, Condition>();
    let checked = 0;
    for (const node of index.nodes.values()) {
      if (node.type === 'finding') continue;
      checked++;
      for (const c of conditionsOf(env, node)) wanted.set(keyOf(c.check, c.subject), c);
    }

    const open = new Map<string, NodeRecord[]>();
    for (const id of index.idsOfType('finding')) {
      const record = index.get(id);
      if (!record || record.status !== 'open') continue;
      const key = findingKey(record);
      if (!key) continue;
      const k = keyOf(key.check, key.subject);
      const list = open.get(k) ?? [];
      list.push(record);
      open.set(k, list);
    }

    const changes: Change[] = [];
    const skipped: string[] = [];
    const taken = new Set<string>();
    const resolve = (record: NodeRecord, resolution: string) => {
      const fm = structuredClone(record.frontmatter);
      fm.status = 'resolved';
      fm.resolved_at = now;
      fm.resolution = resolution;
      changes.push({ id: record.id, node: { frontmatter: fm, body: record.body }, outcome: 'resolved' });
    };

    for (const k of [...wanted.keys()].sort()) {
      const c = wanted.get(k)!;
      const subject = index.get(c.subject);
      const existing = keeperFirst(open.get(k) ?? [], baseIdOf(c.check, c.subject));
      if (existing.length > 0) {
        const keep = existing[0]!;
        skipped.push(keep.id);
        for (const extra of existing.slice(1)) resolve(extra, `duplicate of ${keep.id}`);
        // Still holds: refresh what it says when the facts changed (not reported as filed).
        const project = subject?.project ?? undefined;
        if (
          keep.frontmatter.summary !== c.summary ||
          JSON.stringify(keep.frontmatter.detail) !== JSON.stringify(c.detail) ||
          keep.frontmatter.project !== project
        ) {
          const fm = structuredClone(keep.frontmatter);
          fm.summary = c.summary;
          fm.detail = c.detail;
          if (project) fm.project = project;
          else delete fm.project;
          changes.push({ id: keep.id, node: { frontmatter: fm, body: keep.body }, outcome: 'refreshed' });
        }
        continue;
      }
      // File it: reopen this (check, subject)'s earlier finding when its id is free to reuse.
      const base = baseIdOf(c.check, c.subject);
      let id = base;
      for (let n = 2; ; n++) {
        const current = draft.get(id);
        const reusable = current === null || (current.frontmatter.type === 'finding' && sameKey(current, c));
        if (!taken.has(id) && reusable) break;
        id = `${base}-${n}`;
      }
      taken.add(id);
      const fm: Record<string, unknown> = {
        id,
        type: 'finding',
        status: 'open',
        title: `${c.check}: ${c.subject}`,
        summary: c.summary,
        check: c.check,
        ...(subject?.project ? { project: subject.project } : {}),
        detail: c.detail,
        detected_at: now,
        edges: [{ type: 'concerns', to: c.subject }],
      };
      changes.push({ id, node: { frontmatter: fm, body: body(c) }, outcome: 'filed' });
    }
    for (const [k, records] of open) {
      if (wanted.has(k)) continue;
      for (const record of records) {
        const key = findingKey(record)!;
        resolve(record, index.has(key.subject) ? 'condition no longer holds' : `${key.subject} no longer exists`);
      }
    }

    const failed = await commitChanges(ctx, draft, changes);
    const filed: string[] = [];
    const resolved: string[] = [];
    for (const change of changes) {
      if (failed.has(change.id)) skipped.push(change.id);
      else if (change.outcome === 'filed') filed.push(change.id);
      else if (change.outcome === 'resolved') resolved.push(change.id);
    }
    const sorted = (ids: string[]) => [...new Set(ids)].sort();
    return { checked, filed: sorted(filed), resolved: sorted(resolved), skipped: sorted(skipped), generated_at: now };
  });
}

/** The finding to keep among duplicates: the one with the canonical id, else the oldest (then by id). */
function keeperFirst(records: NodeRecord[], canonical: string): NodeRecord[] {
  const created = (r: NodeRecord) => (typeof r.frontmatter.created === 'string' ? r.frontmatter.created : '');
  return [...records].sort((a, b) => {
    if ((a.id === canonical) !== (b.id === canonical)) return a.id === canonical ? -1 : 1;
    if (created(a) !== created(b)) return created(a) < created(b) ? -1 : 1;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}

function sameKey(current: DraftNode, c: Condition): boolean {
  const edges = Array.isArray(current.frontmatter.edges) ? (current.frontmatter.edges as Array<Record<string, unknown>>) : [];
  return current.frontmatter.check === c.check && edges.some((e) => e.type === 'concerns' && e.to === c.subject);
}

/**
 * One commit for the whole sweep. Should a graph-resident schema hook refuse one finding
 * write, the sweep falls back to one commit per finding so the others still land; the
 * refused ones are returned (and reported under `skipped`).
 */
async function commitChanges(ctx: OpContext, draft: WriteDraft, changes: Change[]): Promise<Set<string>> {
  const failed = new Set<string>();
  if (changes.length === 0) return failed;
  for (const change of changes) draft.put(change.node);
  try {
    await draft.commit();
    return failed;
  } catch (err) {
    if (!isSvcError(err)) throw err;
  }
  for (const change of changes) {
    draft.put(change.node);
    try {
      await draft.commit();
    } catch (err) {
      if (!isSvcError(err)) throw err;
      failed.add(change.id);
      ctx.services.log.warn('gardener: finding write refused', {
        org: ctx.tenant.org,
        id: change.id,
        code: err.code,
        message: err.message,
      });
    }
  }
  return failed;
}
