/**
 * POST /v1/corrections and the `propose_correction` tool (docs/spec.md Writes rule 11): a
 * `correction-` node with a server-generated id that pins nodes into, excludes nodes from,
 * or adds guidance to the digests it fires on. `target` is an existing node id (fires when
 * that node is the compile root or a matched seed), `project:<slug>` (every compile for that
 * project, alias-resolved at compile time) or `global`.
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static, WriteResult } from '../../kernel/operation.js';
import { LIMITS } from '../../kernel/registry.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { resolveScope } from '../core/public.js';
import { slugOf, uniqueId } from './ids.js';
import type { ProposeCorrectionInput } from './schemas.js';

/** pin and exclude hold at most this many ids (the schema's maxItems) */
export const LIST_MAX = 40;
const GUIDANCE_MAX_BYTES = 4 * 1024;

export type CorrectionTarget = { kind: 'global' } | { kind: 'project'; slug: string } | { kind: 'node'; id: string };

export function parseTarget(value: string): CorrectionTarget | null {
  if (value === 'global') return { kind: 'global' };
  if (value.startsWith('project:')) return { kind: 'project', slug: value.slice('project:'.length) };
  return { kind: 'node', id: value };
}

/** The schema (api.ts) admits at most LIST_MAX well-formed ids; each must exist. */
function idList(tenant: Tenant, value: string[] | undefined, field: string): string[] {
  if (value === undefined) return [];
  const ids = [...new Set(value)];
  for (const id of ids) if (!tenant.index.has(id)) throw errors.notFound(`node ${id}`, { field, id });
  return ids;
}

export async function proposeCorrection(ctx: OpContext, input: Static<typeof ProposeCorrectionInput>): Promise<Static<typeof WriteResult>> {
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  const body = input;
  const target = parseTarget(body.target)!;
  const warnings: string[] = [];
  if (target.kind === 'project') {
    const scope = resolveScope(tenant, target.slug);
    if (scope.repos.length === 0 && scope.groupings.length === 0 && tenant.index.idsInProject(target.slug).size === 0) {
      warnings.push(`project ${target.slug} matches no project node and no node yet; the correction fires on compiles for that slug`);
    }
  } else if (target.kind === 'node') {
    if (!tenant.index.has(target.id)) throw errors.notFound(`node ${target.id}`, { field: 'target', id: target.id });
  }
  const pin = idList(tenant, body.pin, 'pin');
  const exclude = idList(tenant, body.exclude, 'exclude');
  const both = pin.filter((id) => exclude.includes(id));
  if (both.length > 0)
    throw errors.validation('an id cannot be both pinned and excluded', [{ field: 'exclude', message: `also pinned: ${both.join(', ')}` }]);
  let guidance: string | undefined;
  if (body.guidance !== undefined) {
    if (Buffer.byteLength(body.guidance, 'utf8') > GUIDANCE_MAX_BYTES) {
      throw errors.validation(`guidance exceeds ${GUIDANCE_MAX_BYTES} bytes`, [
        { field: 'guidance', message: `at most ${GUIDANCE_MAX_BYTES} bytes` },
      ]);
    }
    if (body.guidance.trim()) guidance = body.guidance.trim();
  }
  let title: string | undefined;
  if (body.title !== undefined) {
    if (body.title.trim()) title = body.title.trim();
  }
  if (pin.length === 0 && exclude.length === 0 && !guidance) {
    throw errors.validation('a correction needs pin, exclude or guidance', [
      { field: 'guidance', message: 'give at least one of pin, exclude, guidance' },
    ]);
  }
  const firstGuidanceLine = guidance
    ?.split('\n')
    .find((l) => l.trim())
    ?.trim();
  const summaryText =
    title ??
    firstGuidanceLine ??
    [pin.length ? `pin ${pin.join(', ')}` : '', exclude.length ? `exclude ${exclude.join(', ')}` : ''].filter(Boolean).join('; ');
  const summary = summaryText.length > LIMITS.summaryChars ? `${summaryText.slice(0, LIMITS.summaryChars - 1)}…` : summaryText;

  return ctx.tenant.write(actor, { op: 'propose_correction', via: ctx.via }, async (draft) => {
    const id = uniqueId('correction-', slugOf(title ?? firstGuidanceLine ?? body.target), (x) => draft.get(x) !== null);
    const fm: Record<string, unknown> = { id, type: 'correction', status: 'active', summary };
    if (title) fm.title = title;
    fm.target = body.target;
    if (pin.length > 0) fm.pin = pin;
    if (exclude.length > 0) fm.exclude = exclude;
    if (guidance) fm.guidance = guidance;
    draft.put({ frontmatter: fm, body: '' });
    await draft.commit();
    return { status: 'created' as const, id, revision: tenant.index.get(id)?.revision ?? null, warnings };
  });
}

/** Active corrections that fire on a compile: global, for its project, or about its root or seeds. */
export function firingCorrections(tenant: Tenant, project: string | null, nodeIds: ReadonlySet<string>): NodeRecord[] {
  const scope = project ? resolveScope(tenant, project) : null;
  const out: NodeRecord[] = [];
  // O(corrections): there are few, and the type index hands them over directly.
  for (const id of tenant.index.idsOfType('correction')) {
    const r = tenant.index.get(id);
    if (!r || r.status !== 'active' || typeof r.frontmatter.target !== 'string') continue;
    const target = parseTarget(r.frontmatter.target);
    if (!target) continue;
    if (
      target.kind === 'global' ||
      (target.kind === 'node' && nodeIds.has(target.id)) ||
      (target.kind === 'project' &&
        scope !== null &&
        (scope.values.has(target.slug) || resolveScope(tenant, target.slug).values.has(project!)))
    ) {
      out.push(r);
    }
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

export function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((x): x is string => typeof x === 'string') : [];
}
