/**
 * One webhook request, aimed only where it may go (SSRF): the URL's host is resolved and every
 * address it resolves to must be public (ipaddr.js names every special range: loopback,
 * private, link-local, unique-local, CGNAT, multicast, unspecified, reserved and the
 * IPv4-embedding IPv6 ranges; only 'unicast' is none of them), checked at create/update and
 * again at every delivery, and the connection goes to the address that was checked (a custom
 * `lookup`), so a DNS answer that changes between check and connect (rebinding) cannot swap it.
 * No redirect is followed (a 3xx is a failed attempt), the answer is read to at most
 * RESPONSE_MAX_BYTES, and the whole exchange has one deadline.
 *
 * Connections are kept alive per subscription (ReceiverConnections): a burst of deliveries
 * does not pay a TCP (and TLS) handshake per event. A kept connection is reused only while the
 * target still resolves, and passes the check, to the address it was opened to; a new checked
 * address gets new connections.
 *
 * `allowPrivate` (SVC_WEBHOOK_ALLOW_PRIVATE=1, tests and closed networks) lifts the address check.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** what is kept of a receiver's answer (for the delivery log's error text); the rest is not read */
export const RESPONSE_MAX_BYTES = 4096;

/** how long resolving a target's host may take */
const DNS_TIMEOUT_MS = 5000;

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;
const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Why a target is refused (the create/update answer names it; a delivery logs it). */
export class TargetRefused extends Error {}

/** A public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() === 'unicast';
}

/** targets parsed by URL (a subscription's URL is parsed once, not per delivery); bounded, cleared when full */
const parsedTargets = new Map<string, URL>();

/** parseTarget, remembered per URL for the deliveries (never mutated by the caller) */
function targetOf(url: string): URL {
  let target = parsedTargets.get(url);
  if (!target) {
    target = parseTarget(url);
    if (parsedTargets.size >= 1000) parsedTargets.clear();
    parsedTargets.set(url, target);
  }
  return target;
}

/** The URL as a webhook target: http(s), no credentials in it, at most 2048 characters. */
export function parseTarget(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TargetRefused('not an absolute URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new TargetRefused('the URL must be http or https');
  if (parsed.username || parsed.password) throw new TargetRefused('credentials in the URL are not allowed (the signature authenticates)');
  return parsed;
}

/** The addresses `target` resolves to, each checked unless `allowPrivate`; the first is the one to connect to. */
export async function resolveTarget(
  target: URL,
  opts: { allowPrivate: boolean; resolve?: Resolver; timeoutMs?: number },
): Promise<{ address: string; family: number }> {
  const host = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
  let addresses: Array<{ address: string; family: number }>;
  if (ipaddr.isValid(host)) addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    let timer: NodeJS.Timeout | undefined;
    try {
      // a resolver that never answers must not hold a request (or a delivery turn) forever
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${opts.timeoutMs ?? DNS_TIMEOUT_MS} ms`)),
          opts.timeoutMs ?? DNS_TIMEOUT_MS,
        );
      });
      addresses = await Promise.race([(opts.resolve ?? systemResolver)(host), deadline]);
    } catch (err) {
      throw new TargetRefused(`the host does not resolve (${err instanceof Error ? err.message : String(err)})`);
    } finally {
      clearTimeout(timer);
    }
  }
  if (addresses.length === 0) throw new TargetRefused('the host has no address');
  if (!opts.allowPrivate) {
    const inner = addresses.find((a) => !isPublicAddress(a.address));
    if (inner)
      throw new TargetRefused(
        `the host resolves to a non-public address (${inner.address}); private, loopback and link-local targets need SVC_WEBHOOK_ALLOW_PRIVATE=1`,
      );
  }
  return addresses[0]!;
}

/** What one request needs besides its headers and body: built once per target and checked address. */
interface Route {
  request: typeof httpRequest;
  options: RequestOptions;
}

function routeTo(target: URL, pinned: { address: string; family: number }, agent: HttpAgent | false): Route {
  // every connection attempt gets the checked address, never a fresh DNS answer
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  return {
    request: target.protocol === 'https:' ? httpsRequest : httpRequest,
    options: {
      protocol: target.protocol,
      hostname: target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname,
      port: target.port || undefined,
      path: `${target.pathname}${target.search}`,
      method: 'POST',
      lookup,
      agent,
    },
  };
}

/**
 * The kept-alive connections of one subscription: one socket at most (one request in flight
 * per subscription), reused while the target and its checked address stay the same; and the
 * request in flight, which close() cuts.
 */
export class ReceiverConnections {
  private agent: HttpAgent | null = null;
  private route: Route | null = null;
  private key = '';
  /** cuts the request in flight (set by send while it runs) */
  inFlight: (() => void) | null = null;
  closed = false;

  routeFor(target: URL, pinned: { address: string; family: number }): Route {
    // the host is part of the key: TLS names and Host headers belong to it
    const key = `${target.href}@${pinned.address}`;
    if (this.route && this.key === key) return this.route;
    this.agent?.destroy();
    const options = { keepAlive: true, maxSockets: 1 };
    this.agent = target.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    this.route = routeTo(target, pinned, this.agent);
    this.key = key;
    return this.route;
  }

  close(): void {
    this.closed = true;
    this.inFlight?.();
    this.agent?.destroy();
    this.agent = null;
    this.route = null;
  }
}

const CUT = 'cut: the tenant closed in this process';

export interface SendOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  resolve?: Resolver;
  /** keep-alive connections to reuse; without: one connection for this request alone */
  connections?: ReceiverConnections;
  /** aborted: the request is cut and not tried again (the tenant closed in this process); with `connections`, their close() cuts it too */
  signal?: AbortSignal;
}

export interface SendResult {
  ok: boolean;
  /** the receiver's HTTP status; null when no answer came (refused, unreachable, timed out) */
  status: number | null;
  latency_ms: number;
  /** why the attempt failed, null when it succeeded */
  error: string | null;
}

/** POSTs `body` with `headers` to `url`; never throws: every outcome is a SendResult. */
export async function send(url: string, body: string, headers: Record<string, string>, opts: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const done = (status: number | null, error: string | null): SendResult => ({
    ok: error === null,
    status,
    latency_ms: Math.round(performance.now() - started),
    error,
  });
  let target: URL;
  let pinned: { address: string; family: number };
  try {
    target = targetOf(url);
    pinned = await resolveTarget(target, { ...opts, timeoutMs: Math.min(opts.timeoutMs, DNS_TIMEOUT_MS) });
  } catch (err) {
    return done(null, err instanceof Error ? err.message : String(err));
  }
  const connections = opts.connections;
  if (opts.signal?.aborted || connections?.closed) return done(null, CUT);
  const route = connections ? connections.routeFor(target, pinned) : routeTo(target, pinned, false);
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    let timedOut = false;
    let current: ClientRequest | null = null;
    // one deadline for the whole exchange (connect, send, answer); a plain timer, not an
    // AbortSignal per request (AbortSignal.timeout cost a measurable share of a delivery's CPU)
    const deadline = setTimeout(() => {
      timedOut = true;
      finish(null, `no answer within ${opts.timeoutMs} ms`);
      current?.destroy(new Error('timed out'));
    }, opts.timeoutMs);
    // the engine's stop (the tenant closed in this process) cuts the request in flight: through
    // the subscription's connections (a field, no listener per request) or the caller's signal
    const onCut = () => {
      finish(null, CUT);
      current?.destroy(new Error('cut'));
    };
    if (connections) connections.inFlight = onCut;
    else opts.signal?.addEventListener('abort', onCut, { once: true });
    const finish = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (connections) {
        if (connections.inFlight === onCut) connections.inFlight = null;
      } else opts.signal?.removeEventListener('abort', onCut);
      resolve(done(status, error));
    };
    const options: RequestOptions = { ...route.options, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } };
    const go = (retry: boolean) => {
      let answered = false;
      const req: ClientRequest = route.request(options, (res: IncomingMessage) => {
        answered = true;
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          // the status is what counts: the answer's body is drained, not kept
          res.resume();
          res.on('end', () => finish(status, null));
          res.on('close', () => finish(status, null));
          res.on('error', () => finish(status, null));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_MAX_BYTES) chunks.push(chunk);
          size += chunk.length;
          // the rest of a large answer is not read
          if (size >= RESPONSE_MAX_BYTES) res.destroy();
        });
        const conclude = () => {
          if (status >= 300 && status < 400) return finish(status, `answered ${status} (redirects are not followed; give the final URL)`);
          const text = Buffer.concat(chunks).toString('utf8').slice(0, 200).replace(/\s+/g, ' ').trim();
          finish(status, `answered ${status}${text ? `: ${text}` : ''}`);
        };
        res.on('end', conclude);
        res.on('close', conclude);
        res.on('error', () => conclude());
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        // a kept-alive connection the receiver closed while idle fails at once: once more on a new one
        // (the receiver may have seen the request; a repeat is at-least-once, same webhook-id)
        if (
          retry &&
          req.reusedSocket &&
          !answered &&
          !timedOut &&
          !settled &&
          !opts.signal?.aborted &&
          (err.code === 'ECONNRESET' || err.code === 'EPIPE')
        )
          return go(false);
        if (opts.signal?.aborted) return finish(null, CUT);
        finish(null, timedOut ? `no answer within ${opts.timeoutMs} ms` : err.message);
      });
      current = req;
      req.end(body);
    };
    go(true);
  });
}
