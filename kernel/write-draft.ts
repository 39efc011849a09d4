/**
 * A tenant's write transaction: `WriteDraft`, the view a write operation works on inside
 * `Tenant.write` (kernel/tenant.ts), and what a write is attributed to (`WriteActor`,
 * `WriteMeta`). `commit()` validates every pending change (type, shape, transition and
 * validation hooks, the self-approval ban, the identity guard), stamps its attribution and
 * commits them as one git commit, then applies it to the tenant's index.
 */
import type { Tenant } from './tenant.js';
import { serializeNode, STAMP_KEYS, type Frontmatter } from './codec.js';
import { errors } from './errors.js';
import { unknownTypeError } from './error-hints.js';
import { describeAjvError } from './operation.js';
import type { ErrorObject } from 'ajv';
import { nodePath } from './git/objects.js';
import type { FileChange } from './git/types.js';
import { makeRecord, type CommitEvent, type IndexChange, type NodeRecord } from './graph-index.js';
import { guardIdentityFacts, isIdentityAuthority, type IdentityAuthority } from './identity-guard.js';
import { LIMITS } from './registry.js';

/** Who a write is attributed to. */
export interface WriteActor {
  personId: string;
  name: string;
  email: string;
  agent: string | null;
  session: string | null;
  /**
   * The kind of credential the write came with (`pat`, `agent-standing`, `agent-session`,
   * `oauth-access`, `connector-jwt`, ...): recorded in the commit's `Svc-Credential` trailer so
   * history can tell how a change was made (`workgraph audit identity`).
   */
  credential?: string;
}

export type AuthoredVia = 'rest' | 'mcp' | 'capture' | 'dispatch' | 'distill' | 'gardener' | 'import';

export interface WriteMeta {
  op: string;
  via: AuthoredVia;
  /** server-internal bookkeeping (lease edges, gardener): history marks it `internal` */
  internal?: boolean;
  /**
   * When the change happened (epoch ms), if not now: an admin import replays another tracker's
   * history with its own timestamps (commit author/committer dates, `created`, `updated`).
   */
  at?: number;
  /**
   * The capability to change identity facts (admin rights, agent ownership, people): only the
   * identity operations and the tenant bootstrap hold one (kernel/identity-guard.ts). Without
   * it a write touching an identity fact is 403 `forbidden` and nothing is written.
   */
  identity?: IdentityAuthority;
}

export interface DraftNode {
  frontmatter: Frontmatter;
  body: string;
}

export interface CommittedNode {
  id: string;
  status: 'created' | 'updated' | 'deleted' | 'unchanged';
  revision: string | null;
  record: NodeRecord | null;
}

export interface PutOptions {
  /** stamp author/authored_via from the actor (default true) */
  stamp?: boolean;
  /** skip the transition gate (server-internal moves such as bootstrap) */
  skipTransition?: boolean;
}

interface PendingChange {
  id: string;
  node: DraftNode | null;
  options: PutOptions;
}

/**
 * Self-approval types (schema-, wf-): the people who proposed the current content since it was
 * last active, kept by the server (a client value is ignored). None of them may activate it.
 */
export const PROPOSED_BY = 'proposed_by';

/** Whether a write changes a node beyond its status, attribution stamps and timestamps. */
function contentChanged(before: NodeRecord, fm: Frontmatter, body: string): boolean {
  const strip = (f: Frontmatter) => {
    const copy: Frontmatter = { ...f };
    for (const k of [...STAMP_KEYS, 'status', 'created', 'updated', 'revision', PROPOSED_BY]) delete copy[k];
    return copy;
  };
  return serializeNode(strip(before.frontmatter), before.body) !== serializeNode(strip(fm), body);
}

/**
 * The view a write operation works on: reads see the committed index plus this
 * draft's pending changes; `commit()` validates, stamps and commits them as one git commit.
 */
export class WriteDraft {
  private pending = new Map<string, PendingChange>();
  readonly warnings: string[] = [];
  /** fdatasyncs of commits made with `deferDurability`; `Tenant.write` awaits them before it resolves */
  readonly durable: Promise<void>[] = [];

  constructor(
    readonly tenant: Tenant,
    readonly actor: WriteActor,
    readonly meta: WriteMeta,
  ) {}

  get(id: string): (DraftNode & { revision: string | null }) | null {
    const p = this.pending.get(id);
    if (p) return p.node ? { ...structuredClone(p.node), revision: null } : null;
    const r = this.tenant.index.get(id);
    return r ? { frontmatter: structuredClone(r.frontmatter), body: r.body, revision: r.revision } : null;
  }

  put(node: DraftNode, options: PutOptions = {}): void {
    const id = String(node.frontmatter.id);
    this.pending.set(id, { id, node: { frontmatter: structuredClone(node.frontmatter), body: node.body }, options });
  }

  delete(id: string): void {
    this.pending.set(id, { id, node: null, options: {} });
  }

  get dirty(): boolean {
    return this.pending.size > 0;
  }

  /**
   * The self-approval ban, in the kernel so no path around the status route escapes it (a full
   * put with `status: active`, a batch update, an import, a hook or workflow write): whoever
   * proposed the current content (created it, changed it or moved it back towards activation
   * while it was not active) cannot activate it; an agent or session token acts as its owner
   * (`personId` is the owner), so it cannot either. Changing the content and activating in one
   * write is refused too: the new content would be approved by its own author. Keeps the
   * server-owned `proposed_by` list.
   */
  private selfApproval(id: string, before: NodeRecord | null, fm: Frontmatter, body: string, status: string): void {
    const actor = this.actor.personId;
    const previous =
      before && Array.isArray(before.frontmatter[PROPOSED_BY]) ? (before.frontmatter[PROPOSED_BY] as unknown[]).map(String) : [];
    const changed = before ? contentChanged(before, fm, body) : true;
    let proposers: string[];
    if (!before) proposers = [actor];
    else if (status === 'active' && before.status !== 'active') {
      const lastAuthor = typeof before.frontmatter.author === 'string' ? before.frontmatter.author : null;
      if (previous.includes(actor) || lastAuthor === actor) {
        throw errors.transitionDenied(
          `self-approval ban: ${actor} proposed ${id}; another identity (not one of their agents or sessions) must activate it`,
          {
            id,
            gate: 'self-approval',
            proposed_by: previous.length > 0 ? previous : lastAuthor ? [lastAuthor] : [],
            actor,
          },
        );
      }
      if (changed) {
        throw errors.transitionDenied(
          `self-approval ban: ${id} cannot be changed and activated in one write; write the change, then another identity activates it`,
          {
            id,
            gate: 'self-approval',
            actor,
          },
        );
      }
      proposers = previous;
    } else if (status !== 'active') {
      if (before.status === 'active') proposers = changed ? [actor] : [];
      else proposers = changed || before.status !== status ? [...new Set([...previous, actor])] : previous;
    } else proposers = previous;
    if (proposers.length > 0) fm[PROPOSED_BY] = proposers;
    else delete fm[PROPOSED_BY];
  }

  /**
   * Validate and commit pending changes; nothing is committed if any of them fails. Resolves
   * once the commit is durable, or with `deferDurability` once it is written to the journal
   * and applied (the durability is then awaited by `Tenant.write` before it acknowledges):
   * only for a caller that persists nothing else on the strength of the commit before
   * `write` returns.
   */
  async commit(options: { deferDurability?: boolean } = {}): Promise<Map<string, CommittedNode>> {
    const pending = [...this.pending.values()];
    this.pending = new Map();
    const out = new Map<string, CommittedNode>();
    if (pending.length === 0) return out;
    const { tenant } = this;
    const registry = tenant.registry;
    const now = new Date(this.meta.at ?? tenant.clock.now()).toISOString();
    const files: FileChange[] = [];
    const prepared: Array<{
      id: string;
      path: string;
      markdown: string | null;
      fm: Frontmatter | null;
      body: string;
      before: NodeRecord | null;
    }> = [];
    let identityChanged = false;

    for (const change of pending) {
      const before = tenant.index.get(change.id) ?? null;
      if (!change.node) {
        if (!before) continue;
        if (guardIdentityFacts(registry, change.id, before, null, this.meta.identity).length > 0) identityChanged = true;
        files.push({ path: before.path, content: null });
        prepared.push({ id: change.id, path: before.path, markdown: null, fm: null, body: '', before });
        continue;
      }
      const fm = change.node.frontmatter;
      const body = change.node.body;
      const typeDef = registry.nodeTypes.get(String(fm.type));
      if (!typeDef) throw unknownTypeError(registry, change.id, fm.type);
      if (!change.id.startsWith(typeDef.prefix)) {
        throw errors.validation(`id '${change.id}' does not carry the ${typeDef.type} prefix '${typeDef.prefix}'`, [
          { field: 'id', message: `must start with ${typeDef.prefix}` },
        ]);
      }
      if (before && before.type !== typeDef.type) {
        throw errors.validation(`node ${change.id} is a ${before.type}; its type cannot change`, [{ field: 'type' }]);
      }
      if (!before && typeDef.forced_initial_status) fm.status = typeDef.forced_initial_status;
      if (fm.status === undefined || fm.status === null || fm.status === '') fm.status = before ? before.status : typeDef.initial;
      // An approved (active) node of a self-approval type that changes content needs a new
      // approval: otherwise anyone could rewrite an active schema hook or workflow unreviewed.
      let demoted = false;
      if (typeDef.self_approval_ban && before && before.status === 'active' && fm.status === 'active' && contentChanged(before, fm, body)) {
        fm.status = 'proposed';
        demoted = true;
        this.warnings.push(`${change.id} changed while active: it is proposed again until another identity activates it`);
      }
      const status = String(fm.status);
      if (typeDef.self_approval_ban) this.selfApproval(change.id, before, fm, body, status);

      if (!change.options.skipTransition && !demoted && (!before || before.status !== status)) {
        const view: Record<string, unknown> = { ...fm, body };
        for (const k of STAMP_KEYS) {
          if (before && before.frontmatter[k] !== undefined) view[k] = before.frontmatter[k];
          else if (!before) delete view[k];
        }
        await tenant.hooks.checkTransition(registry, typeDef.type, {
          node: view,
          from: before ? before.status : null,
          to: status,
          actor: this.actor.personId,
        });
      }
      // No completion-resolver check here: a create is the move from null through the transition
      // gate above, the same gate a status change passes (docs/decisions.md "patch"). The docs/spec.md
      // "order resolver first" rule is about a put batch and lives with the put (plugins/core).

      if (change.options.stamp !== false) {
        for (const k of STAMP_KEYS) delete fm[k];
        fm.author = this.actor.personId;
        fm.authored_via = this.actor.agent && (this.meta.via === 'rest' || this.meta.via === 'mcp') ? 'dispatch' : this.meta.via;
        if (this.actor.agent) {
          fm.authored_by_agent = this.actor.agent;
          if (this.actor.session) fm.session = this.actor.session;
        }
      }
      if (before && typeof before.frontmatter.created === 'string') fm.created = before.frontmatter.created;
      else if (typeof fm.created !== 'string') fm.created = now;
      delete fm.updated;
      delete fm.revision;

      const shapeErrors = registry.validateShape(typeDef, fm);
      // the first reason in the message (the full list stays under details.errors)
      if (shapeErrors.length > 0)
        throw errors.validation(
          `invalid ${typeDef.type} frontmatter${describeAjvError(shapeErrors[0] as Partial<ErrorObject>)}`,
          shapeErrors,
        );
      if (Buffer.byteLength(body, 'utf8') > LIMITS.bodyBytes) {
        throw errors.validation(`body exceeds ${LIMITS.bodyBytes} bytes`, [
          { field: 'body', message: `at most ${LIMITS.bodyBytes} bytes`, bytes: Buffer.byteLength(body, 'utf8') },
        ]);
      }
      await tenant.hooks.validate(registry, typeDef.type, { ...fm, body });

      // An edit that changes nothing but the timestamp is not a change.
      if (before) {
        const { updated: _u, ...prevRest } = before.frontmatter;
        if (serializeNode(prevRest, before.body) === serializeNode(fm, body)) {
          out.set(change.id, { id: change.id, status: 'unchanged', revision: before.revision, record: before });
          continue;
        }
      }
      // The identity guard: every write passes here, whatever route, tool, hook or plugin made it.
      if (guardIdentityFacts(registry, change.id, before, { frontmatter: fm, body }, this.meta.identity).length > 0) identityChanged = true;
      fm.updated = now;
      const markdown = serializeNode(fm, body);
      const path = nodePath(typeDef.type, change.id);
      files.push({ path, content: markdown });
      prepared.push({ id: change.id, path, markdown, fm, body, before });
    }

    if (files.length === 0) return out;
    const parent = tenant.store.head();
    const ids = prepared.map((p) => p.id);
    const trailers = [`Svc-Op: ${this.meta.op}`, `Svc-Via: ${this.meta.via}`, `Svc-Person: ${this.actor.personId}`];
    if (this.actor.agent) trailers.push(`Svc-Agent: ${this.actor.agent}`);
    if (this.actor.session) trailers.push(`Svc-Session: ${this.actor.session}`);
    if (this.actor.credential) trailers.push(`Svc-Credential: ${this.actor.credential}`);
    if (identityChanged && isIdentityAuthority(this.meta.identity)) trailers.push(`Svc-Identity: ${this.meta.identity.holder}`);
    if (this.meta.internal) trailers.push('Svc-Internal: true');
    const summary = ids.length > 3 ? `${ids.slice(0, 3).join(', ')} and ${ids.length - 3} more` : ids.join(', ');
    const seconds = Math.floor((this.meta.at ?? tenant.clock.now()) / 1000);
    const author = { name: this.actor.name, email: this.actor.email, timestamp: seconds, timezoneOffset: 0 };
    const result = await tenant.store.commitDeferred({
      changes: files,
      author,
      committer: author,
      message: `${this.meta.op}: ${summary}\n\n${trailers.join('\n')}\n`,
      expectedParent: parent,
    });

    const changes: IndexChange[] = [];
    for (const p of prepared) {
      if (p.markdown === null || p.fm === null) {
        changes.push({ id: p.id, before: p.before, after: null });
        out.set(p.id, { id: p.id, status: 'deleted', revision: null, record: null });
        continue;
      }
      const oid = result.blobs[p.path] ?? tenant.store.blobOid(p.markdown);
      const record = makeRecord(p.path, oid, p.markdown, p.fm, p.body);
      changes.push({ id: p.id, before: p.before, after: record });
      out.set(p.id, { id: p.id, status: p.before ? 'updated' : 'created', revision: oid, record });
    }
    const event: CommitEvent = {
      commit: result.commit,
      parent,
      changes,
      actor: { person: this.actor.personId, name: this.actor.name, email: this.actor.email, agent: this.actor.agent },
      via: this.meta.via,
      op: this.meta.op,
      internal: Boolean(this.meta.internal),
      date: new Date(seconds * 1000).toISOString(),
    };
    // The index follows the store's head at once (the journal record is written: a process
    // crash no longer loses the commit); the acknowledgement waits for the fdatasync.
    tenant.noteUndurable(result.durable);
    tenant.index.applyCommit(event);
    tenant.noteCommit();
    if (options.deferDurability) this.durable.push(result.durable);
    else {
      await result.durable;
      await tenant.eventsAppended();
    }
    return out;
  }
}
