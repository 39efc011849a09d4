/**
 * What both ways into the REST API share (kernel/http.ts, the koa app; kernel/direct-reads.ts,
 * the direct read lane): the bearer header's shape, the request id, the Host/Origin check per
 * listening port, and the access line with the request metrics written when a response closes.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AccessFields } from './config.js';
import type { SvcError } from './errors.js';
import { checkHostAndOrigin, hostRules, type HostRules } from './host-guard.js';
import type { KernelServices } from './plugin.js';

/** The token of an `Authorization: Bearer <token>` header, else undefined. */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}

/** A JWT (three base64url parts), not one of the kernel's `svc_` tokens. */
export const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** A client's `x-request-id` that is kept (else one is minted). */
export const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The Host/Origin check (kernel/host-guard.ts) with its rules per listening port (the listener's
 * actual port, also when PORT=0): the refusal for a request, or null.
 */
export function hostGuard(
  services: KernelServices,
): (localPort: number | undefined, path: string, headers: IncomingHttpHeaders) => SvcError | null {
  const rulesByPort = new Map<number, HostRules>();
  return (localPort, path, headers) => {
    const port = localPort ?? services.config.port;
    let rules = rulesByPort.get(port);
    if (!rules) rulesByPort.set(port, (rules = hostRules(services.config, port)));
    return checkHostAndOrigin(rules, path, headers.host, headers.origin, headers['sec-fetch-site'] as string | undefined);
  };
}

/** What the access line says about one request. */
export interface RequestRecord {
  method: string;
  /** the route pattern (`/v1/nodes/:id`) or a fixed word: never the raw path with ids */
  route: string;
  status: number;
  /** performance.now() when the request arrived */
  started: number;
  tenant: string | null;
  actor: string | null;
  requestId: string;
}

/**
 * Writes the access line and observes the request duration. The histogram's series per method,
 * route and status is looked up once (kernel/request-histogram.ts).
 */
export function requestRecorder(services: KernelServices): (r: RequestRecord) => void {
  const children = new Map<string, { observe(value: number): void }>();
  return (r) => {
    const status = String(r.status);
    const key = `${r.method} ${r.route} ${status}`;
    let child = children.get(key);
    if (!child) children.set(key, (child = services.metrics.httpDuration.child({ method: r.method, route: r.route, status })));
    const seconds = (performance.now() - r.started) / 1000;
    child.observe(seconds);
    const fields: AccessFields = {
      method: r.method,
      route: r.route,
      status: r.status,
      duration_ms: Math.round(seconds * 1e5) / 100,
      tenant: r.tenant,
      actor: r.actor,
      request_id: r.requestId,
    };
    if (services.log.request) services.log.request(fields);
    else services.log.info('request', fields as unknown as Record<string, unknown>);
  };
}
