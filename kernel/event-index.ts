/**
 * A derived, in-memory index that follows a tenant's commits (history's commit index,
 * analytics' timelines). It subscribes to commit events first, then builds from what is
 * stored (`load`); events that arrive while a build runs are buffered and applied after it.
 * An event applied outside a build runs inside the kernel's commit path, where a listener
 * must never throw: one that cannot be applied drops the index and rebuilds it.
 *
 * Subclasses call `start()` at the end of their constructor (same tick as the subscription,
 * so no commit falls between the two), and implement `reset`, `load` and `applyEvent`.
 */
import type { CommitEvent } from './graph-index.js';
import type { Tenant } from './tenant.js';

export abstract class EventIndex {
  private buffered: CommitEvent[] | null = [];
  private building: Promise<void> = Promise.resolve();
  private readonly unsubscribe: () => void;

  constructor(
    protected readonly tenant: Tenant,
    /** names the index in log lines */
    private readonly label: string,
  ) {
    this.unsubscribe = tenant.index.subscribe((event) => {
      if (this.buffered) {
        this.buffered.push(event);
        return;
      }
      try {
        this.applyEvent(event);
      } catch (err) {
        tenant.log.error(`${label} fell out of step; rebuilding`, { org: tenant.org, commit: event.commit, error: String(err) });
        this.rebuild();
      }
    });
  }

  /** Drop everything derived. */
  protected abstract reset(): void;
  /**
   * Build from what is stored up to now; later commits arrive as events. May return the
   * commits it already covered: buffered events for those are not applied again.
   */
  protected abstract load(): Promise<Set<string> | void>;
  /** Apply one commit made through the tenant's write path. */
  protected abstract applyEvent(event: CommitEvent): void;
  /** What `ready()` throws when a build failed (default: the failure itself). */
  protected unavailable(err: unknown): unknown {
    return err;
  }

  protected start(): void {
    this.building = this.build();
    // a failure surfaces (and is retried) in ready(); never as an unhandled rejection
    this.building.catch(() => undefined);
  }

  /** Resolves once the index covers HEAD; a failed build is retried from scratch by the next call. */
  async ready(): Promise<void> {
    const attempt = this.building;
    try {
      await attempt;
    } catch (err) {
      if (this.building === attempt) {
        this.tenant.log.error(`${this.label} build failed`, { org: this.tenant.org, error: String(err) });
        this.rebuild();
      }
      throw this.unavailable(err);
    }
  }

  /** Drops everything and builds again; events arriving meanwhile are buffered (the new load covers the ones before). */
  protected rebuild(): void {
    this.reset();
    this.buffered = [];
    this.start();
  }

  private async build(): Promise<void> {
    const covered = await this.load();
    const pending = this.buffered ?? [];
    this.buffered = null;
    for (const event of pending) if (!covered || !covered.has(event.commit)) this.applyEvent(event);
  }

  close(): void {
    this.unsubscribe();
  }
}
