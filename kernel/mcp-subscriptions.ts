/**
 * MCP `resources/subscribe` for one long-lived MCP server (a Streamable HTTP session of
 * kernel/mcp-sessions.ts, or the stdio process of scripts/mcp-stdio.ts): the subscribed URIs,
 * one listener on the tenant's event log (kernel/events/types.ts), and the coalesced
 * `notifications/resources/updated` each matching event causes. docs/events.md, "MCP
 * subscriptions", is the user-facing account.
 */
import type { Actor } from './actor.js';
import { matchesFilter, type WorkEvent } from './events/types.js';
import type { OpContext, ResourceDef, ResourceTemplateDef } from './plugin.js';
import { errors } from './errors.js';

/** At most one notification per resource per this many milliseconds (a burst of writes is one re-read). */
export const COALESCE_MS = 100;
/** Subscriptions one session may hold: a resource each, so an agent watching its work fits easily. */
export const MAX_SUBSCRIPTIONS = 200;

/** The resource (static or from a template) a URI names, and its change test bound to the URI. */
export interface ResolvedResource {
  read: (ctx: OpContext) => Promise<string>;
  mimeType: string;
  _meta?: Record<string, unknown>;
  affectedBy?: (event: WorkEvent, caller: Actor) => boolean;
}

export function resolveResource(uri: string, resources: ResourceDef[], templates: ResourceTemplateDef[]): ResolvedResource | null {
  const fixed = resources.find((r) => r.uri === uri);
  if (fixed) {
    const test = fixed.affectedBy;
    return {
      read: async (ctx) => fixed.read(ctx),
      mimeType: fixed.mimeType,
      ...(fixed._meta ? { _meta: fixed._meta } : {}),
      ...(test ? { affectedBy: test } : {}),
    };
  }
  for (const template of templates) {
    const params = template.match(uri);
    if (!params) continue;
    const test = template.affectedBy;
    return {
      read: (ctx) => template.read(ctx, params),
      mimeType: template.mimeType,
      ...(test ? { affectedBy: (event: WorkEvent, caller: Actor) => test(event, params, caller) } : {}),
    };
  }
  return null;
}

export interface SubscriptionsOptions {
  /** the caller as of its latest request (an admin flag may change during a session) */
  context: () => OpContext;
  resolve: (uri: string) => ResolvedResource | null;
  /** sends `notifications/resources/updated` for `uri`; a failure is the transport's (a closed stream), never retried */
  notify: (uri: string) => Promise<void>;
  /**
   * Asked before an event is looked at: false when the credential behind the subscriptions is no
   * longer good (revoked, expired, the tenant gone), so nothing more is sent (the session ends).
   */
  valid?: () => boolean;
  coalesceMs?: number;
}

export class ResourceSubscriptions {
  private readonly subs = new Map<string, (event: WorkEvent, caller: Actor) => boolean>();
  private readonly lastSent = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopListening: (() => void) | null = null;
  private closed = false;

  constructor(private readonly opts: SubscriptionsOptions) {}

  get size(): number {
    return this.subs.size;
  }

  /** trailing notifications scheduled and not yet sent */
  get pending(): number {
    return this.timers.size;
  }

  /**
   * Subscribes to `uri` after reading it once as the caller: a resource the caller may not read
   * (404, 403) cannot be watched either, so a notification never tells them more than a read would.
   */
  async subscribe(uri: string): Promise<void> {
    const resource = this.opts.resolve(uri);
    if (!resource) throw errors.notFound(`resource ${uri}`);
    if (!resource.affectedBy) throw errors.badRequest(`resource ${uri} does not support subscriptions`);
    const ctx = this.opts.context();
    await resource.read(ctx);
    if (!this.subs.has(uri) && this.subs.size >= MAX_SUBSCRIPTIONS)
      throw errors.badRequest(`at most ${MAX_SUBSCRIPTIONS} resource subscriptions per session`);
    if (this.closed) return;
    this.subs.set(uri, resource.affectedBy);
    this.stopListening ??= ctx.tenant.events.subscribe((event) => this.onEvent(event));
  }

  unsubscribe(uri: string): void {
    this.subs.delete(uri);
    const timer = this.timers.get(uri);
    if (timer) clearTimeout(timer);
    this.timers.delete(uri);
    this.lastSent.delete(uri);
    if (this.subs.size === 0) this.detach();
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.subs.clear();
    this.detach();
  }

  private detach(): void {
    this.stopListening?.();
    this.stopListening = null;
  }

  /** The event log's listener: synchronous and cheap (it only schedules). */
  private onEvent(event: WorkEvent): void {
    if (this.opts.valid && !this.opts.valid()) return this.close();
    const caller = this.opts.context().actor;
    if (!matchesFilter(event, { admin: caller.isAdmin })) return;
    for (const [uri, affectedBy] of this.subs) {
      let hit: boolean;
      try {
        hit = affectedBy(event, caller);
      } catch {
        // a faulty test must not stop the other subscriptions or the log's other listeners
        hit = false;
      }
      if (hit) this.schedule(uri);
    }
  }

  /** Leading edge at once, then at most one trailing notification per window. */
  private schedule(uri: string): void {
    if (this.timers.has(uri)) return;
    const window = this.opts.coalesceMs ?? COALESCE_MS;
    const since = performance.now() - (this.lastSent.get(uri) ?? -Infinity);
    if (since >= window) return this.send(uri);
    const timer = setTimeout(() => {
      this.timers.delete(uri);
      if (this.subs.has(uri)) this.send(uri);
    }, window - since);
    timer.unref();
    this.timers.set(uri, timer);
  }

  private send(uri: string): void {
    if (this.closed) return;
    this.lastSent.set(uri, performance.now());
    this.opts.notify(uri).catch(() => undefined);
  }
}
