/**
 * Fetching a client ID metadata document without letting anyone aim the server at its own
 * network (SSRF): a client id is any URL a stranger types into /oauth/authorize, so the fetch
 * is https only, to public addresses only (every address the host resolves to is checked with
 * ipaddr.js; loopback, private, link-local, unique-local, multicast, CGNAT, reserved and the
 * IPv4-embedding IPv6 ranges are refused), the connection goes to the address that was checked
 * (a custom `lookup`, so a DNS answer that changes between check and connect cannot swap it),
 * no redirect is followed, and the answer is capped in size and time.
 *
 * `allowPrivate` (SVC_OAUTH_ALLOW_PRIVATE_METADATA=1, tests and closed networks) lifts the
 * address check and allows http.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export const METADATA_MAX_BYTES = 64 * 1024;
export const METADATA_TIMEOUT_MS = 5000;

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;
const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

export interface MetadataFetchOptions {
  allowPrivate: boolean;
  /** DNS resolution (injectable so a test can answer with addresses of its choosing) */
  resolve?: Resolver;
  maxBytes?: number;
  timeoutMs?: number;
}

/** Why a document was not fetched (logged; the client sees `invalid_client`). */
export class MetadataRefused extends Error {}

/** A public unicast address: ipaddr.js names every special range, and only 'unicast' is none of them. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() === 'unicast';
}

/** The JSON document at `url`, or a MetadataRefused saying why not. */
export async function fetchMetadataDocument(url: string, opts: MetadataFetchOptions): Promise<unknown> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new MetadataRefused('not a URL');
  }
  if (parsed.protocol !== 'https:' && !(opts.allowPrivate && parsed.protocol === 'http:'))
    throw new MetadataRefused('a client metadata document is fetched over https only');
  if (parsed.username || parsed.password) throw new MetadataRefused('credentials in the URL');
  const maxBytes = opts.maxBytes ?? METADATA_MAX_BYTES;
  const timeoutMs = opts.timeoutMs ?? METADATA_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);

  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const addresses = ipaddr.isValid(host)
    ? [{ address: host, family: host.includes(':') ? 6 : 4 }]
    : await withDeadline((opts.resolve ?? systemResolver)(host), deadline, 'resolving the host');
  if (addresses.length === 0) throw new MetadataRefused('the host has no address');
  if (!opts.allowPrivate) {
    const inner = addresses.find((a) => !isPublicAddress(a.address));
    if (inner) throw new MetadataRefused(`the host resolves to a non-public address (${inner.address})`);
  }
  const pinned = addresses[0]!;
  // every connection attempt of this request gets the checked address, never a fresh DNS answer
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };

  return new Promise<unknown>((resolve, reject) => {
    const request = parsed.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(
      parsed,
      { method: 'GET', lookup, headers: { accept: 'application/json' }, signal: deadline, agent: false },
      (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new MetadataRefused(`answered ${res.statusCode} (redirects are not followed)`));
          req.destroy();
          return;
        }
        const declared = Number(res.headers['content-length'] ?? 0);
        if (declared > maxBytes) {
          reject(new MetadataRefused(`larger than ${maxBytes} bytes`));
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            reject(new MetadataRefused(`larger than ${maxBytes} bytes`));
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
          } catch {
            reject(new MetadataRefused('not JSON'));
          }
        });
        res.on('error', (err) => reject(new MetadataRefused(err.message)));
      },
    );
    req.on('error', (err) => reject(new MetadataRefused(deadline.aborted ? `no answer within ${timeoutMs} ms` : err.message)));
    req.end();
  });
}

function withDeadline<T>(p: Promise<T>, signal: AbortSignal, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new MetadataRefused(`${what} took too long`));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(new MetadataRefused(`${what}: ${err instanceof Error ? err.message : String(err)}`));
      },
    );
  });
}
