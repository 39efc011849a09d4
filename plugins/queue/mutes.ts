/**
 * Per-person mute lists (operational state, `queue-mutes` collection, keyed by person id).
 * A muted node leaves that person's queue items (counted as `muted`, docs/spec.md rule 3) until the
 * mute is removed or its optional `until` date passes.
 *
 *   GET    /v1/queue/mutes        -> {person, mutes: [{id, until, muted_at}], count}
 *   POST   /v1/queue/mutes        {id, until?: YYYY-MM-DD} -> {status: muted|updated, id, until, muted_at}
 *   DELETE /v1/queue/mutes/{id}   -> {status: unmuted|skipped, id}
 */
import { errors } from '../../kernel/errors.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Static } from '../../kernel/operation.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { AddMuteInput, AddMuteOutput, ListMutesOutput, MuteEntry, RemoveMuteInput, RemoveMuteOutput } from './schemas.js';

type MuteEntry = Static<typeof MuteEntry>;

interface MuteList {
  mutes: MuteEntry[];
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function collectionOf(tenant: Tenant) {
  return tenant.state.collection<MuteList>('queue-mutes');
}

function activeMutes(list: MuteList | undefined, nowMs: number): MuteEntry[] {
  return (list?.mutes ?? []).filter((m) => m.until === null || Date.parse(`${m.until}T00:00:00Z`) > nowMs);
}

/** The node ids a person has muted right now. */
export function mutedIds(tenant: Tenant, person: string | null, nowMs: number): Set<string> {
  if (!person) return new Set();
  return new Set(activeMutes(collectionOf(tenant).get(person), nowMs).map((m) => m.id));
}

function personOf(ctx: OpContext): string {
  if (!ctx.actor.bound) throw errors.noPersonForbidden('mute lists belong to a person node');
  return ctx.actor.personId;
}

export async function listMutes(ctx: OpContext): Promise<Static<typeof ListMutesOutput>> {
  const person = personOf(ctx);
  const mutes = activeMutes(collectionOf(ctx.tenant).get(person), ctx.services.clock.now()).sort((a, b) => (a.id < b.id ? -1 : 1));
  return { person, mutes, count: mutes.length };
}

/** `id` and the `until` form (YYYY-MM-DD) are checked by the input schema (schemas.ts); a real, future date here. */
export async function addMute(ctx: OpContext, input: Static<typeof AddMuteInput>): Promise<Static<typeof AddMuteOutput>> {
  const { id } = input;
  const person = personOf(ctx);
  let until: string | null = null;
  const nowMs = ctx.services.clock.now();
  if (input.until !== undefined && input.until !== null) {
    if (!DATE.test(input.until) || Number.isNaN(Date.parse(`${input.until}T00:00:00Z`))) {
      throw errors.validation('until must be a date YYYY-MM-DD', [{ field: 'until', message: 'malformed date' }]);
    }
    if (Date.parse(`${input.until}T00:00:00Z`) <= nowMs)
      throw errors.validation('until is in the past', [{ field: 'until', value: input.until }]);
    until = input.until;
  }
  if (!ctx.tenant.index.has(id)) throw errors.notFound(`node ${id}`);
  const collection = collectionOf(ctx.tenant);
  const mutes = activeMutes(collection.get(person), nowMs);
  const existing = mutes.find((m) => m.id === id);
  const entry: MuteEntry = { id, until, muted_at: new Date(nowMs).toISOString() };
  await collection.set(person, { mutes: [...mutes.filter((m) => m.id !== id), entry] });
  return { status: existing ? 'updated' : 'muted', ...entry };
}

export async function removeMute(ctx: OpContext, input: Static<typeof RemoveMuteInput>): Promise<Static<typeof RemoveMuteOutput>> {
  const { id } = input;
  const person = personOf(ctx);
  const collection = collectionOf(ctx.tenant);
  const mutes = activeMutes(collection.get(person), ctx.services.clock.now());
  const kept = mutes.filter((m) => m.id !== id);
  if (kept.length === mutes.length) return { status: 'skipped', id };
  await collection.set(person, { mutes: kept });
  return { status: 'unmuted', id };
}
