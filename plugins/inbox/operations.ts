/**
 * The inbox operations: a person's items (model.ts) with their read flags, and marking them
 * read (one durable write of the person's read state, or none when nothing changes).
 */
import { errors } from '../../kernel/errors.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { inboxesOf, type Inboxes } from './model.js';
import type { MarkInboxReadInput, MarkInboxReadOutput, ShowInboxInput, ShowInboxOutput } from './schemas.js';

function personOf(ctx: OpContext): string {
  if (!ctx.actor.bound) throw errors.noPersonForbidden('an inbox belongs to a person node');
  return ctx.actor.personId;
}

async function inboxOf(ctx: OpContext): Promise<Inboxes> {
  const inboxes = inboxesOf(ctx.tenant, ctx.tenant.events);
  await inboxes.caughtUp();
  return inboxes;
}

export async function showInbox(ctx: OpContext, input: Static<typeof ShowInboxInput>): Promise<Static<typeof ShowInboxOutput>> {
  const person = personOf(ctx);
  const inboxes = await inboxOf(ctx);
  const all = inboxes.list(person, ctx.services.clock.now());
  const chosen = all.filter((i) => (!input.kind || i.kind === input.kind) && (!input.unread || !i.read));
  return {
    person,
    items: chosen.slice(0, input.limit ?? 50),
    unread_count: all.filter((i) => !i.read).length,
    total: chosen.length,
    through: inboxes.through,
  };
}

export async function markInboxRead(ctx: OpContext, input: Static<typeof MarkInboxReadInput>): Promise<Static<typeof MarkInboxReadOutput>> {
  const person = personOf(ctx);
  if ((input.ids === undefined) === (input.all !== true))
    throw errors.validation('give ids, or all: true', [{ field: input.ids ? 'all' : 'ids', message: 'exactly one of ids and all' }]);
  if (input.through !== undefined && !input.all)
    throw errors.validation('through goes with all: true', [{ field: 'through', message: 'only with all' }]);
  const inboxes = await inboxOf(ctx);
  const now = ctx.services.clock.now();
  const before = inboxes.list(person, now);
  const byId = new Map(before.map((i) => [i.id, i]));
  let ids: string[];
  let through: number | null = null;
  let skipped: string[] = [];
  if (input.all) {
    through = Math.min(input.through ?? inboxes.through, inboxes.through);
    // claims about to expire carry no event id: the ones shown now are marked by id
    ids = before.filter((i) => i.event_id === null).map((i) => i.id);
  } else {
    const asked = [...new Set(input.ids)];
    skipped = asked.filter((id) => !byId.has(id));
    ids = asked.filter((id) => byId.has(id));
  }
  const next = inboxes.marked(person, ids, through);
  const isRead = (i: { id: string; event_id: number | null }) =>
    (i.event_id !== null && i.event_id <= next.through) || next.read.includes(i.id);
  const marked = before.filter((i) => !i.read && isRead(i)).length;
  if (marked > 0) await inboxes.reads.set(person, next);
  return { marked, skipped, unread_count: before.filter((i) => !i.read && !isRead(i)).length };
}
