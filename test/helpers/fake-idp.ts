/**
 * A real HTTP fake of the external identity provider (docs/design.md §7) on a loopback port,
 * speaking the small API the identity plugin's adapter uses (plugins/identity/README.md):
 *
 *   GET  /v1/memberships?email=E   -> 200 {orgs: [{slug, name}]}
 *   POST /v1/invitations {email, name, org, connection_id, invited_by}
 *                                  -> 201 {id, org, email, connection_id}
 *
 * Tests seed memberships, read the invitations it received, make it answer errors, or
 * stop it to make it unreachable.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeInvitation {
  id: string;
  email: string;
  name: string;
  org: string | null;
  connection_id: string | null;
  invited_by: string;
}

export interface FakeIdp {
  url: string;
  /** every request the provider received, as `METHOD path?query` */
  requests: string[];
  invitations: FakeInvitation[];
  addMembership(email: string, slug: string, name?: string): void;
  /** connection ids the provider knows; an invitation naming another one is refused (404) */
  connections: Set<string>;
  /** when set, every call answers this status with an error envelope */
  failWith: number | null;
  /** stops listening: later calls find nothing there (connection refused) */
  stop(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export async function startFakeIdp(): Promise<FakeIdp> {
  const memberships = new Map<string, Array<{ slug: string; name: string }>>();
  let counter = 0;
  const fake: FakeIdp = {
    url: '',
    requests: [],
    invitations: [],
    connections: new Set(['con-default']),
    failWith: null,
    addMembership(email, slug, name = slug) {
      const key = email.toLowerCase();
      memberships.set(key, [...(memberships.get(key) ?? []), { slug, name }]);
    },
    stop: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake-idp');
      fake.requests.push(`${req.method} ${url.pathname}${url.search}`);
      if (fake.failWith !== null)
        return send(res, fake.failWith, { error: { code: 'idp_failure', message: 'the provider is having a bad day' } });
      if (req.method === 'GET' && url.pathname === '/v1/memberships') {
        const email = url.searchParams.get('email');
        if (!email) return send(res, 400, { error: { code: 'bad_request', message: 'email is required' } });
        return send(res, 200, { orgs: memberships.get(email.toLowerCase()) ?? [] });
      }
      if (req.method === 'POST' && url.pathname === '/v1/invitations') {
        const body = await readJson(req);
        if (!body || typeof body.email !== 'string' || typeof body.name !== 'string') {
          return send(res, 400, { error: { code: 'bad_request', message: 'email and name are required' } });
        }
        const connection = typeof body.connection_id === 'string' ? body.connection_id : null;
        if (connection !== null && !fake.connections.has(connection)) {
          return send(res, 404, { error: { code: 'unknown_connection', message: `no connection ${connection}` } });
        }
        const invitation: FakeInvitation = {
          id: `inv_${++counter}`,
          email: body.email,
          name: body.name,
          org: typeof body.org === 'string' ? body.org : null,
          connection_id: connection,
          invited_by: String(body.invited_by ?? ''),
        };
        fake.invitations.push(invitation);
        return send(res, 201, { id: invitation.id, org: invitation.org, email: invitation.email, connection_id: invitation.connection_id });
      }
      return send(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${url.pathname}` } });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  let stopped = false;
  fake.url = `http://127.0.0.1:${port}`;
  fake.stop = async () => {
    if (stopped) return;
    stopped = true;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return fake;
}
