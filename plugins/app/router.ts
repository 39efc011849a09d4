/**
 * Cluster mode's routing of the app's requests (docs/scale-out.md): they carry no bearer token,
 * so the forwarder asks this router which tenant's owner must serve them.
 *
 * - `POST /app/signin`: the tenant of the pasted token (its SHA-256; the body is read);
 * - `POST /app/invite/{org}`: that tenant (its sign-in links are its state);
 * - `GET /app/signin/oidc?org=`: that tenant when named (it keeps the sign-in's token record);
 * - a view page with a render ticket: the ticket's tenant (plugins/lenses/tickets.ts routes it);
 * - any other request with the session cookie: the session's current tenant (the tenant
 *   switch form included: it is served by the current tenant's owner, which rewrites the
 *   record; the next page goes to the new tenant's owner).
 */
import type { IncomingMessage } from 'node:http';
import { hashToken } from '../../kernel/auth.js';
import type { KernelServices, RequestRouter } from '../../kernel/plugin.js';
import { ticketOrgOf } from '../lenses/public.js';
import { isAppPath } from './paths.js';
import { cookieOf, SESSION_COOKIE, sessionStoreOf } from './session.js';

const pathOf = (req: IncomingMessage) => (req.url ?? '/').split('?')[0]!;
const isSignin = (req: IncomingMessage) => req.method === 'POST' && /^\/app\/signin\/?$/.test(pathOf(req));

function inviteOrg(req: IncomingMessage): string | null {
  const m = req.method === 'POST' ? /^\/app\/invite\/([^/]+)\/?$/.exec(pathOf(req)) : null;
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}

function oidcOrg(req: IncomingMessage): string | null {
  if (!/^\/app\/signin\/oidc\/?$/.test(pathOf(req))) return null;
  return new URL(req.url ?? '/', 'http://app.invalid').searchParams.get('org') || null;
}

export function appRouter(services: KernelServices): RequestRouter {
  return {
    applies(req) {
      const path = pathOf(req);
      if (!isAppPath(path) || path.startsWith('/app/static/')) return false; // static files: any process
      if (ticketOrgOf(req)) return false; // the ticket's router
      if (isSignin(req) && String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return 'body';
      if (inviteOrg(req) || oidcOrg(req)) return 'headers';
      return cookieOf(req.headers.cookie, SESSION_COOKIE) ? 'headers' : false;
    },
    async route(req, body, opts) {
      if (isSignin(req) && body) {
        const token = (new URLSearchParams(body.toString('utf8')).get('token') ?? '').trim();
        if (token) return { tokenHash: hashToken(token) };
      }
      const org = inviteOrg(req) ?? oidcOrg(req);
      if (org) return { org };
      // forwarded here: the session's current tenant as the table has it (a switch made on
      // another member may not have reached this process's copy yet)
      const found = await sessionStoreOf(services).recordOf(cookieOf(req.headers.cookie, SESSION_COOKIE), { fresh: opts?.fresh === true });
      return found ? { org: found.record.current } : null;
    },
  };
}
