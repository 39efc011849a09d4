/**
 * Stateful MCP sessions over Streamable HTTP (docs/events.md, "MCP subscriptions"): an
 * `initialize` POST gets an `Mcp-Session-Id`; the session keeps one MCP server and transport
 * (its resource subscriptions, its GET notification stream) until DELETE, idle expiry, the
 * token's revocation or the tenant leaving this process. A session is bound to the token that
 * created it and to its tenant: any other token naming it gets 404, as an unknown id does.
 * Requests without a session id stay stateless (kernel/http.ts builds a server per request).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isLive } from './auth.js';
import { SvcError } from './errors.js';
import { withRequestContext } from './mcp.js';
import type { KernelServices, OpContext } from './plugin.js';
import type { Tenant } from './tenant.js';

/** How often expired sessions are looked for besides the checks every request makes. */
const SWEEP_MS = 30_000;

interface Session {
  id: string;
  org: string;
  tenant: Tenant;
  /** SHA-256 of the bearer token that created the session */
  credential: string;
  /** the kernel token record's hash, when the credential is one of ours (checked for revocation) */
  tokenHash: string | null;
  server: Server;
  transport: StreamableHTTPServerTransport;
  /** services.clock time of the last request */
  lastSeen: number;
  /** open GET notification streams (the SDK allows one; counted so a reconnect race is harmless) */
  streams: number;
  /** the latest request's context: notifications and subscription checks use its actor */
  ctx: OpContext;
  closed: boolean;
}

export function credentialOf(bearerToken: string): string {
  return createHash('sha256').update(bearerToken).digest('hex');
}

export interface NewSession {
  credential: string;
  ctx: OpContext;
  /** builds the session's MCP server (kernel/mcp.ts buildMcpServer with `subscriptions: true`) */
  build: (ctx: () => OpContext, valid: () => boolean) => Promise<Server>;
}

export class McpSessions {
  private readonly sessions = new Map<string, Session>();
  private readonly timer: NodeJS.Timeout;
  /** tenants whose close ends their sessions here (one hook each) */
  private readonly watched = new WeakSet<Tenant>();

  constructor(private readonly services: KernelServices) {
    this.timer = setInterval(() => this.sweep(), SWEEP_MS);
    this.timer.unref();
    services.metrics.gauge('workgraph_mcp_sessions', 'MCP sessions on this process', ['tenant', 'stream'], () => {
      const counts = new Map<string, { labels: Record<string, string>; value: number }>();
      for (const s of this.sessions.values()) {
        const stream = s.streams > 0 ? 'open' : 'none';
        const key = `${s.org}\u0000${stream}`;
        const entry = counts.get(key) ?? { labels: { tenant: s.org, stream }, value: 0 };
        entry.value++;
        counts.set(key, entry);
      }
      return [...counts.values()];
    });
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * The live session `id` for this credential and tenant, or null (unknown, another token's,
   * another tenant's, expired: the caller answers 404 alike, so an id reveals nothing).
   */
  find(id: string, credential: string, tenant: Tenant, tokenHash: string): Session | null {
    const session = this.sessions.get(id);
    if (!session) return null;
    const mine = session.credential === credential && session.tenant === tenant;
    // a refreshed OAuth token of the same grant: revocation is checked on the token in use now
    if (mine && session.tokenHash && tokenHash !== session.tokenHash && tenant.tokens.find(tokenHash)) session.tokenHash = tokenHash;
    if (this.expired(session)) {
      this.end(session, 'expired');
      return null;
    }
    return mine ? session : null;
  }

  /**
   * Handles one request of an existing session: its context for the tools (headers, actor), the
   * GET stream counted open while it lasts.
   */
  async handle(session: Session, ctx: OpContext, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    session.lastSeen = this.services.clock.now();
    session.ctx = ctx;
    if (req.method === 'GET') {
      // a stream can be silent for long: TCP keep-alive finds a peer that vanished, so its
      // session stops counting as live (and can expire or give way) instead of holding a place
      req.socket.setKeepAlive(true, 30_000);
      session.streams++;
      res.once('close', () => {
        session.streams--;
        session.lastSeen = this.services.clock.now();
      });
    }
    await withRequestContext(ctx, () => session.transport.handleRequest(req, res, body));
  }

  /** Opens a session for an `initialize` POST and answers it (with its `Mcp-Session-Id`). */
  async open(spec: NewSession, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const { tenant } = spec.ctx;
    const id = randomUUID();
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
    // the server asks for the session's context only while handling a request, after `session` exists
    // and whether it is still good before each event: a revoked token hears nothing more
    const server = await spec.build(
      () => session.ctx,
      () => {
        if (!this.expired(session)) return true;
        this.end(session, 'expired');
        return false;
      },
    );
    const session: Session = {
      id,
      org: tenant.org,
      tenant,
      credential: spec.credential,
      tokenHash: tenant.tokens.find(spec.ctx.actor.token.hash) ? spec.ctx.actor.token.hash : null,
      server,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => id,
        enableJsonResponse: true,
        // DELETE from the client ends the session here too
        onsessionclosed: () => this.end(session, 'deleted'),
      }),
      lastSeen: this.services.clock.now(),
      streams: 0,
      ctx: spec.ctx,
      closed: false,
    };
    try {
      // no await between the bound check and the registration: concurrent initializes each count
      this.makeRoom(spec.credential, tenant.org);
    } catch (err) {
      void server.close();
      throw err;
    }
    this.sessions.set(id, session);
    if (!this.watched.has(tenant)) {
      // a tenant leaving this process (cluster hand-off, lost lease) ends its sessions at once, not
      // at the next sweep: the client's next request gets 404 and it starts anew at the new owner
      this.watched.add(tenant);
      tenant.onClose(async () => {
        for (const s of [...this.sessions.values()]) if (s.tenant === tenant) this.end(s, 'tenant closed here');
      });
    }
    try {
      await server.connect(session.transport);
      await withRequestContext(spec.ctx, () => session.transport.handleRequest(req, res, body));
    } finally {
      // an initialize the transport refused (malformed) made no session
      if (session.transport.sessionId === undefined) this.end(session, 'refused');
    }
    if (!session.closed) this.services.log.info('mcp session opened', { tenant: session.org, session: id.slice(0, 8) });
  }

  /** Ends every session (the server stops). */
  closeAll(): void {
    clearInterval(this.timer);
    for (const session of [...this.sessions.values()]) this.end(session, 'server stopping');
  }

  private expired(session: Session): boolean {
    if (session.tenant !== this.services.tenants.get(session.org)) return true;
    if (session.tokenHash) {
      const record = session.tenant.tokens.find(session.tokenHash);
      if (!record || !isLive(record, this.services.clock.now())) return true;
    }
    return session.streams === 0 && this.services.clock.now() - session.lastSeen > this.services.config.mcpSessionIdleMs;
  }

  private sweep(): void {
    for (const session of [...this.sessions.values()]) if (this.expired(session)) this.end(session, 'expired');
  }

  /**
   * Room for one more session of `credential` in `org`: expired ones go first, then the least
   * recently used one without an open stream (a client that never said DELETE); when every
   * session has a live stream, 429.
   */
  private makeRoom(credential: string, org: string): void {
    this.sweep();
    const { mcpSessionsPerToken, mcpSessionsPerTenant } = this.services.config;
    const bounds: Array<[(s: Session) => boolean, number, string]> = [
      [(s) => s.credential === credential, mcpSessionsPerToken, 'token'],
      [(s) => s.org === org, mcpSessionsPerTenant, 'tenant'],
    ];
    for (const [mine, limit, scope] of bounds) {
      const held = [...this.sessions.values()].filter(mine);
      if (held.length < limit) continue;
      const idle = held.filter((s) => s.streams === 0).sort((a, b) => a.lastSeen - b.lastSeen);
      const excess = held.length - limit + 1;
      if (idle.length < excess)
        throw new SvcError(
          429,
          'too_many_sessions',
          `this ${scope} already holds ${held.length} MCP sessions with open streams (at most ${limit}); end one with DELETE /mcp`,
          { limit, scope },
        );
      for (const s of idle.slice(0, excess)) this.end(s, `over the ${scope} limit`);
    }
  }

  private end(session: Session, reason: string): void {
    if (session.closed) return;
    session.closed = true;
    this.sessions.delete(session.id);
    // closing the transport ends its GET stream; the server's onclose drops its subscriptions
    void session.transport.close().catch(() => undefined);
    void session.server.close().catch(() => undefined);
    if (reason !== 'refused') this.services.log.info('mcp session ended', { tenant: session.org, session: session.id.slice(0, 8), reason });
  }
}
