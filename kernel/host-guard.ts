/**
 * DNS-rebinding protection: every request's `Host` must name this service, and a present
 * `Origin` must be one it trusts (the MCP transport specification's MUST; the MCP SDK's
 * `allowedHosts` / `allowedOrigins` / `hostHeaderValidation` do the same for its own servers).
 *
 * A page of evil.example whose DNS answer is rebound to this server's address reaches it with
 * `Host: evil.example` and `Origin: http://evil.example`; both are refused here, before any
 * route, token check or form runs.
 *
 * Allowed `Host` names:
 * - SVC_PUBLIC_URL's host name (any port: a TLS proxy may or may not keep the port);
 * - SVC_ALLOWED_HOSTS entries (`name` any port, `name:port` that port only);
 * - when the listener is bound to loopback: localhost, 127.0.0.1 and [::1], any port. The port
 *   is no defence against rebinding (the attacker controls the name, not the port; a page of
 *   another local origin is caught by the Origin check), the SDK's localhost validation ignores
 *   it too, and cluster members on loopback forward a request with the Host it arrived with.
 * When bound to a non-loopback address with neither SVC_PUBLIC_URL nor SVC_ALLOWED_HOSTS, the
 * names the service is reached by are unknown: Host is not checked (a warning at start says so).
 *
 * A present `Origin` is allowed when it is same-origin with the (already checked) `Host` (what
 * a browser sends from this service's own pages, also when a cluster member forwarded the
 * request), SVC_PUBLIC_URL's origin, an SVC_ALLOWED_ORIGINS entry, or, bound to loopback, a
 * loopback origin with the listening port. A request without Origin (curl, server-to-server
 * MCP clients, top-level GET navigations) is not a browser cross-origin request and passes.
 * `Origin: null` passes only with the browser's `Sec-Fetch-Site: same-origin`.
 *
 * `/healthz` and `/metrics` skip the Host check: load balancers and scrapers call them by IP
 * address; neither answers anything a rebinding page could use (/metrics needs its token).
 */
import { isLoopback, type ServerConfig } from './config.js';
import { SvcError } from './errors.js';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const HOST_EXEMPT = new Set(['/healthz', '/metrics']);

export interface HostRules {
  /** null: the Host is not checked (non-loopback bind, nothing configured) */
  anyPortNames: Set<string> | null;
  exactHosts: Set<string>;
  origins: Set<string>;
}

/** The allow lists for a listener on `port` (the actual port once it listens). */
export function hostRules(config: Pick<ServerConfig, 'host' | 'publicUrl' | 'allowedHosts' | 'allowedOrigins'>, port: number): HostRules {
  const names = new Set<string>();
  const exactHosts = new Set<string>();
  const origins = new Set<string>(config.allowedOrigins);
  if (config.publicUrl) {
    const u = new URL(config.publicUrl);
    names.add(u.hostname.toLowerCase());
    origins.add(u.origin);
  }
  for (const h of config.allowedHosts) {
    if (/:\d+$/.test(h)) exactHosts.add(h);
    else names.add(h);
  }
  const loopback = isLoopback(config.host);
  if (loopback) {
    for (const n of LOOPBACK_NAMES) {
      names.add(n);
      origins.add(`http://${n}:${port}`);
      origins.add(`https://${n}:${port}`);
    }
  }
  const configured = loopback || config.publicUrl !== null || config.allowedHosts.length > 0;
  return { anyPortNames: configured ? names : null, exactHosts, origins };
}

/** `name` and `name:port` of a Host header value, lower-cased; null when it is not one. */
/**
 * parseHost's answers by Host header value: a server sees few distinct values, and URL parsing
 * on every request was a measurable share of a read. Bounded (a client cycling through made-up
 * names only stops being cached).
 */
const parsedHosts = new Map<string, { name: string; host: string } | null>();
const PARSED_HOSTS_MAX = 256;

function parseHost(value: string): { name: string; host: string } | null {
  const known = parsedHosts.get(value);
  if (known !== undefined) return known;
  const parsed = parseHostOnce(value);
  if (parsedHosts.size < PARSED_HOSTS_MAX) parsedHosts.set(value, parsed);
  return parsed;
}

function parseHostOnce(value: string): { name: string; host: string } | null {
  if (!value || value.length > 300) return null;
  try {
    const u = new URL(`http://${value}`);
    // a Host with a path, credentials or anything URL parsing would drop is not a host
    if (u.username || u.password || u.pathname !== '/' || u.search || u.hash) return null;
    const host = value.toLowerCase();
    if (host !== u.host && host !== `${u.host}:80`) return null;
    return { name: u.hostname, host };
  } catch {
    return null;
  }
}

function hostAllowed(rules: HostRules, host: { name: string; host: string }): boolean {
  return rules.anyPortNames === null || rules.anyPortNames.has(host.name) || rules.exactHosts.has(host.host);
}

/**
 * The refusal for a request, or null when it may go on. `hostHeader` is the raw Host header
 * (HTTP/1.1 requires it; HTTP/1.0 without one is refused once Host is checked).
 */
export function checkHostAndOrigin(
  rules: HostRules,
  path: string,
  hostHeader: string | undefined,
  originHeader: string | undefined,
  fetchSite?: string | undefined,
): SvcError | null {
  const host = hostHeader === undefined ? null : parseHost(hostHeader);
  if (!HOST_EXEMPT.has(path) && rules.anyPortNames !== null && (!host || !hostAllowed(rules, host))) {
    return new SvcError(
      403,
      'forbidden_host',
      `the Host header '${(hostHeader ?? '').slice(0, 100)}' does not name this service; add the name to SVC_ALLOWED_HOSTS if it should`,
      {
        host: (hostHeader ?? '').slice(0, 100),
      },
    );
  }
  if (originHeader === undefined) return null;
  // `Origin: null` is what browsers send for a same-origin form post from a page whose
  // Referrer-Policy is no-referrer (the app's and the consent page's); the browser's own
  // `Sec-Fetch-Site: same-origin` (a header no page can set) tells it apart from an opaque
  // origin (a sandboxed frame, a file, a cross-site redirect), which stays refused.
  if (originHeader === 'null' && fetchSite === 'same-origin' && host) return null;
  let origin: URL | null;
  try {
    origin = originHeader === 'null' ? null : new URL(originHeader);
  } catch {
    origin = null;
  }
  if (origin && (origin.protocol === 'http:' || origin.protocol === 'https:')) {
    if (rules.origins.has(origin.origin)) return null;
    // same-origin with the request's own (allowed) Host: a page of this service
    if (host && origin.host === host.host.replace(/:80$/, '') && hostAllowed(rules, host)) return null;
  }
  return new SvcError(
    403,
    'forbidden_origin',
    `requests from the origin '${originHeader.slice(0, 100)}' are not accepted; add it to SVC_ALLOWED_ORIGINS if it should be`,
    {
      origin: originHeader.slice(0, 100),
    },
  );
}
