/**
 * A real webhook receiver for the tests: an HTTP server on a loopback port that verifies every
 * request with the `standardwebhooks` package's own verifier (`new Webhook(secret).verify`),
 * records what it received, and answers as the test tells it (status, delay, redirect), or is
 * down (closed) for a while.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  n: number;
  headers: Record<string, string>;
  body: string;
  json: any;
  /** the signature verified with the secret the test set (null: no secret set yet) */
  verified: boolean | null;
  verifyError: string | null;
  /** when it arrived (performance.now()) and from which port (tells senders' connections apart) */
  at: number;
  port: number;
}

export interface Reply {
  status?: number;
  delayMs?: number;
  headers?: Record<string, string>;
  body?: string;
}

export class Receiver {
  readonly received: Received[] = [];
  secret: string | null = null;
  /** how to answer the n-th request (1-based); default 200 */
  reply: (n: number, req: Received) => Reply = () => ({ status: 200 });
  private server: Server | null = null;
  port = 0;
  private readonly sockets = new Set<Socket>();
  /** TCP connections accepted so far (kept-alive connections are reused across deliveries) */
  connections = 0;
  /** requests open now (until their answer went out or their connection closed), and the most at once */
  inFlight = 0;
  maxInFlight = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async start(port = 0): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.on('connection', (s) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Down: the port refuses connections until `start(this.port)` again. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.once('close', () => this.inFlight--);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    let verified: boolean | null = null;
    let verifyError: string | null = null;
    if (this.secret) {
      try {
        new Webhook(this.secret).verify(body, headers);
        verified = true;
      } catch (err) {
        verified = false;
        verifyError = String(err);
      }
    }
    let json: any;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const rec: Received = {
      n: this.received.length + 1,
      headers,
      body,
      json,
      verified,
      verifyError,
      at: performance.now(),
      port: req.socket.remotePort ?? 0,
    };
    this.received.push(rec);
    const reply = this.reply(rec.n, rec);
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (res.destroyed) return;
    res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...(reply.headers ?? {}) });
    res.end(reply.body ?? 'ok');
  }

  /** The event ids received in order (pings excluded). */
  eventIds(): number[] {
    return this.received.filter((r) => r.json?.data?.id > 0).map((r) => r.json.data.id as number);
  }
}

/** Every id appears, and the sequence never goes back (duplicates allowed: at least once, in order). */
export function inOrderAtLeastOnce(seen: number[], expected: number[]): void {
  for (let i = 1; i < seen.length; i++)
    if (seen[i]! < seen[i - 1]!) throw new Error(`out of order: ${seen[i - 1]} then ${seen[i]} in ${seen.join(',')}`);
  const set = new Set(seen);
  const missing = expected.filter((id) => !set.has(id));
  if (missing.length) throw new Error(`never delivered: ${missing.join(',')} (seen ${seen.join(',')})`);
}
