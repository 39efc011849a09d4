/**
 * How an operation records an operational event (a claim, a routed question, an admin
 * change): awaited before the operation answers, so the event is durable when the caller
 * hears of the change. The change itself has already happened: a failing event log is
 * logged, never turned into a failure of the operation.
 */
import type { Actor } from '../actor.js';
import type { Tenant } from '../tenant.js';
import type { EventActor, NewEvent, WorkEvent } from './types.js';

/** The event actor of an authenticated caller. */
export function eventActorOf(actor: Actor, via: string): EventActor {
  return { person: actor.personId, agent: actor.agent, name: actor.name, via };
}

/** The server acting on its own (a lease expiring, a sweep). */
export const SYSTEM_ACTOR: EventActor = { person: null, agent: null, name: 'system', via: 'system' };

/** Appends `event` to the tenant's log and waits until it is durable; null when the log failed (logged). */
export async function emitEvent(tenant: Tenant, event: NewEvent): Promise<WorkEvent | null> {
  try {
    // after the events of the commits already made (they wait for their commit's durability)
    await tenant.eventsAppended();
    return await tenant.events.emit(event);
  } catch (err) {
    tenant.log.error('event not recorded', { org: tenant.org, type: event.type, error: String(err) });
    return null;
  }
}
