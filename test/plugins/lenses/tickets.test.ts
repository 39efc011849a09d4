/**
 * Render tickets (docs/spec.md "Lenses" rules 2-5, Authentication 1 and the render-ticket row, the
 * Render ticket record, Limits): minting, the one-time 302 exchange into the HttpOnly
 * `svc_render_ticket` cookie, the sharer banner, scope (this lens's render route only,
 * read-only), expiry, app URLs, and that a ticket never reaches a log line.
 */
import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { jwtVerify, SignJWT, decodeJwt } from 'jose';
import type { TestServer } from '../../helpers/harness.js';
import { unboundToken } from '../leases/helpers.js';
import { cookieFrom, DAY, ids, seed, startLensServer, type Fixture } from './helpers.js';
import { onPostgres, startTestServer } from '../../helpers/harness.js';

describe('lenses: render tickets', function () {
  let t: TestServer;
  let f: Fixture;
  /** every ticket minted here, to prove none reaches a log line */
  const minted: string[] = [];

  before(async () => {
    t = await startLensServer();
    f = await seed(t);
  });
  after(async () => {
    // docs/spec.md rule 2: the ticket leaves URLs and logs. Nothing this suite minted was logged.
    const logs = t.logs.join('\n');
    expect(minted.length).to.be.greaterThan(5);
    for (const ticket of minted) {
      expect(logs).to.not.include(ticket);
      expect(logs).to.not.include(ticket.split('.')[2]!);
    }
    await t.close();
  });

  async function mint(lens: string, token: string, body: unknown = {}) {
    const res = await t.api('POST', `/v1/lens/${lens}/ticket`, { token, body });
    if (res.status === 200) minted.push(res.body.ticket);
    return res;
  }

  /** Mints, exchanges the ticket (302) and returns the cookie header value. */
  async function shareCookie(lens: string, token: string, body: unknown = {}): Promise<{ cookie: string; ticket: string }> {
    const m = await mint(lens, token, body);
    expect(m.status, m.text).to.equal(200);
    const x = await t.api('GET', m.body.url, { token: null });
    expect(x.status, x.text).to.equal(302);
    return { cookie: cookieFrom(x.headers.get('set-cookie')), ticket: m.body.ticket };
  }

  const viaCookie = (path: string, cookie: string) => t.api('GET', path, { token: null, headers: { cookie } });

  describe('POST /v1/lens/{id}/ticket', () => {
    it('answers the Render ticket record {ticket, url, lens_id, sharer_person_id, exp}; default expiry 7d', async () => {
      const now = t.clock.now();
      const res = await mint('lens-board', f.alice.token);
      expect(res.status, res.text).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['ticket', 'url', 'lens_id', 'sharer_person_id', 'exp']);
      expect(res.body.lens_id).to.equal('lens-board');
      expect(res.body.sharer_person_id).to.equal(f.alice.id);
      expect(Date.parse(res.body.exp)).to.be.closeTo(now + 7 * DAY, 5000);
      expect(res.body.url).to.equal(`/v1/lens/lens-board/render?ticket=${res.body.ticket}`);
    });

    it('is signed with the per-tenant key kept under tenants/<org>/auth/ (0600), read-only and render-scoped; nothing is stored', async () => {
      const keyFile = join(t.dataDir, 'tenants', t.org, 'auth', 'render-ticket.key');
      expect(statSync(keyFile).mode & 0o777).to.equal(0o600);
      const tokensFile = join(t.dataDir, 'tenants', t.org, 'auth', 'tokens.json');
      const tokensBefore = onPostgres ? '' : readFileSync(tokensFile, 'utf8'); // (cluster mode keeps tokens in PostgreSQL)
      const res = await mint('lens-board', f.alice.token);
      const secret = Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64url');
      const { payload, protectedHeader } = await jwtVerify(res.body.ticket, secret, { currentDate: new Date(t.clock.now()) });
      expect(protectedHeader.alg).to.equal('HS256');
      expect(payload).to.include({ iss: t.org, sub: f.alice.id, lens: 'lens-board', scope: 'lens:render' });
      expect(payload.exp).to.equal(Date.parse(res.body.exp) / 1000);
      // not stored: the token file did not change, and the ticket is nowhere under state/
      if (!onPostgres) expect(readFileSync(tokensFile, 'utf8')).to.equal(tokensBefore);
    });

    it('expires: <N>d or an ISO date, at most 30d; beyond, past or malformed is 422', async () => {
      const now = t.clock.now();
      const thirty = await mint('lens-board', f.alice.token, { expires: '30d' });
      expect(thirty.status).to.equal(200);
      expect(Date.parse(thirty.body.exp)).to.be.closeTo(now + 30 * DAY, 5000);
      const iso = new Date(now + 3 * DAY).toISOString();
      const dated = await mint('lens-board', f.alice.token, { expires: iso });
      expect(dated.status).to.equal(200);
      expect(Math.abs(Date.parse(dated.body.exp) - Date.parse(iso))).to.be.lessThan(1000);
      for (const expires of ['31d', new Date(now + 31 * DAY).toISOString(), new Date(now - DAY).toISOString(), '0d', 'soon', 7]) {
        const res = await mint('lens-board', f.alice.token, { expires });
        expect(res.status, `expires ${expires}`).to.equal(422);
        expect(res.body.error.code).to.equal('validation_failed');
      }
    });

    it('a caller not bound to a person node gets 422 no_person', async () => {
      const res = await mint('lens-board', await unboundToken(t));
      expect(res.status).to.equal(422);
      expect(res.body.error.code).to.equal('no_person');
    });

    it('unknown lens 404, malformed id 422, no token 401, unknown body field 422, label at most 200 characters', async () => {
      expect((await mint('lens-nope', f.alice.token)).status).to.equal(404);
      expect((await mint('Bad_Id', f.alice.token)).status).to.equal(422);
      expect((await t.api('POST', '/v1/lens/lens-board/ticket', { token: null, body: {} })).status).to.equal(401);
      expect((await mint('lens-board', f.alice.token, { scope: 'write' })).status).to.equal(422);
      expect((await mint('lens-board', f.alice.token, { label: 'x'.repeat(201) })).status).to.equal(422);
      const labelled = await mint('lens-board', f.alice.token, { label: 'x'.repeat(200) });
      expect(labelled.status).to.equal(200);
      expect(labelled.body.label).to.have.length(200);
    });

    it('with SVC_APP_URL the url is {app_url}/views/{id}?ticket=<blob>; behind a TLS proxy the cookie is Secure', async () => {
      const app = await startLensServer({ config: { appUrl: 'https://app.example.test/', allowHttp: true } });
      try {
        await app.api('POST', '/v1/nodes', {
          body: { nodes: ['---\nid: lens-all\ntype: lens\nsummary: all tasks\nquery: {type: task}\n---\n'] },
        });
        const res = await app.api('POST', '/v1/lens/lens-all/ticket', { body: {} });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.url).to.equal(`https://app.example.test/views/lens-all?ticket=${res.body.ticket}`);
        // the app host forwards the same credential to the API: the exchange works there too
        const x = await app.api('GET', `/v1/lens/lens-all/render?ticket=${res.body.ticket}`, { token: null });
        expect(x.status).to.equal(302);
        expect(x.headers.get('set-cookie')).to.match(/; Secure$/);
        const tree = await app.api('GET', '/v1/lens/lens-all/render?format=json', {
          token: null,
          headers: { cookie: cookieFrom(x.headers.get('set-cookie')) },
        });
        expect(tree.status).to.equal(200);
        expect(tree.body.sharer.id).to.equal(app.adminPerson);
        expect(app.logs.join('\n')).to.not.include(res.body.ticket);
      } finally {
        await app.close();
      }
    });
  });

  describe('the exchange and the shared render', () => {
    it('a ticket query parameter is exchanged by a 302 to the same URL without it, for an HttpOnly svc_render_ticket cookie', async () => {
      const m = await mint('lens-board', f.alice.token);
      const res = await t.api('GET', `/v1/lens/lens-board/render?format=text&param.project=proj-root&ticket=${m.body.ticket}`, {
        token: null,
      });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/v1/lens/lens-board/render?format=text&param.project=proj-root');
      const setCookie = res.headers.get('set-cookie')!;
      expect(setCookie).to.include(`svc_render_ticket=${m.body.ticket}`);
      expect(setCookie).to.include('HttpOnly');
      expect(setCookie).to.include('SameSite=Lax');
      expect(setCookie).to.include('Path=/v1/lens/lens-board/render');
      expect(setCookie).to.not.include('Secure'); // plain HTTP on loopback: a browser would drop a Secure cookie
      const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie)![1]);
      expect(maxAge).to.be.closeTo(7 * 24 * 3600, 10);
      expect(res.headers.get('cache-control')).to.include('no-store');
      expect(res.text).to.equal('');
    });

    it('the cookie renders the lens as the sharer, with a banner naming them (html escaped, text, json sharer)', async () => {
      const { cookie } = await shareCookie('lens-board', f.alice.token, { label: '<b>team</b> board' });
      const html = await viaCookie('/v1/lens/lens-board/render', cookie);
      expect(html.status, html.text).to.equal(200);
      expect(html.text).to.include('class="banner"');
      expect(html.text).to.include(`Shared by <strong>Alice</strong> (${f.alice.id})`);
      expect(html.text).to.include('&lt;b&gt;team&lt;/b&gt; board');
      expect(html.text).to.not.include('<b>team</b>');
      expect(html.text.toLowerCase()).to.not.match(/<form|<script|<input|<button/);
      const text = await viaCookie('/v1/lens/lens-board/render?format=text', cookie);
      expect(text.text).to.include(`Shared by Alice (${f.alice.id})`);
      const json = await viaCookie('/v1/lens/lens-board/render?format=json', cookie);
      expect(json.body.sharer).to.deep.include({ id: f.alice.id, name: 'Alice' });
      expect(ids(json.body)).to.include('task-a');
    });

    it('the ticket binds the viewer to the sharer: assignee: me is the sharer', async () => {
      const { cookie } = await shareCookie('lens-mine', f.bob.token);
      expect(ids((await viaCookie('/v1/lens/lens-mine/render?format=json', cookie)).body)).to.deep.equal(['task-b']);
    });

    it('params pinned at mint hold: repeating them is fine, changing them is 403', async () => {
      const { cookie } = await shareCookie('lens-board', f.alice.token, { params: { project: 'api' } });
      const tree = (await viaCookie('/v1/lens/lens-board/render?format=json', cookie)).body;
      expect(tree.params).to.deep.equal({ project: 'api' });
      expect(ids(tree)).to.deep.equal(['issue-e', 'task-c']);
      expect((await viaCookie('/v1/lens/lens-board/render?format=json&param.project=api', cookie)).status).to.equal(200);
      const widened = await viaCookie('/v1/lens/lens-board/render?format=json&param.project=proj-root', cookie);
      expect(widened.status).to.equal(403);
      expect(widened.body.error.code).to.equal('forbidden');
      // a ticket without pinned params pins the lens defaults
      const plain = await shareCookie('lens-board', f.alice.token);
      expect((await viaCookie('/v1/lens/lens-board/render?format=json&param.project=web', plain.cookie)).status).to.equal(403);
      // a param that could never render is refused at mint
      expect((await mint('lens-board', f.alice.token, { params: { project: 'Bad_Slug' } })).status).to.equal(422);
      expect((await mint('lens-board', f.alice.token, { params: { colour: 'red' } })).status).to.equal(422);
    });

    it('a bearer token outranks the cookie (no banner, the caller is the viewer)', async () => {
      const { cookie } = await shareCookie('lens-mine', f.bob.token);
      const res = await t.api('GET', '/v1/lens/lens-mine/render?format=json', { token: f.alice.token, headers: { cookie } });
      expect(res.status).to.equal(200);
      expect(res.body).to.not.have.property('sharer');
      expect(ids(res.body)).to.deep.equal(['task-a']);
    });

    it('the ticket works only on the render route of its own lens', async () => {
      const { cookie, ticket } = await shareCookie('lens-board', f.alice.token);
      // another lens
      expect((await viaCookie('/v1/lens/lens-mine/render', cookie)).status).to.equal(401);
      expect((await t.api('GET', `/v1/lens/lens-mine/render?ticket=${ticket}`, { token: null })).status).to.equal(401);
      // other routes, as a cookie, a query parameter or a bearer token
      for (const path of ['/v1/me', '/v1/nodes/task-a', '/v1/lens', '/v1/status']) {
        expect((await viaCookie(path, cookie)).status, path).to.equal(401);
        expect((await t.api('GET', `${path}?ticket=${ticket}`, { token: null })).status, path).to.equal(401);
      }
      expect((await t.api('GET', '/v1/lens/lens-board/render', { token: ticket })).status).to.equal(401);
      expect((await t.api('GET', '/v1/me', { token: ticket })).status).to.equal(401);
      // no write scope: a write route with the cookie or the ticket
      const write = await t.api('POST', '/v1/nodes/task-a/status', { token: null, headers: { cookie }, body: { status: 'done' } });
      expect(write.status).to.equal(401);
      expect((await t.api('POST', '/v1/lens/lens-board/ticket', { token: null, headers: { cookie }, body: {} })).status).to.equal(401);
      expect((await t.api('POST', '/v1/nodes/task-a/priority', { token: ticket, body: { priority: 'p3' } })).status).to.equal(401);
      // nor the MCP endpoint
      const mcp = await fetch(`${t.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ticket}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          cookie,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(mcp.status).to.equal(401);
    });

    it('a tampered, forged or unsigned ticket is 401', async () => {
      const m = await mint('lens-board', f.alice.token);
      const [h, p, s] = m.body.ticket.split('.');
      const flipped = `${h}.${p}.${s.slice(0, -2)}${s.endsWith('AA') ? 'BB' : 'AA'}`;
      const claims = decodeJwt(m.body.ticket);
      const widened = Buffer.from(JSON.stringify({ ...claims, lens: 'lens-mine' })).toString('base64url');
      const forged = await new SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'HS256', typ: 'svc-render-ticket+jwt' })
        .sign(new Uint8Array(32).fill(7));
      const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'svc-render-ticket+jwt' })).toString('base64url')}.${p}.`;
      for (const bad of [flipped, `${h}.${widened}.${s}`, forged, unsigned, 'garbage', 'a.b.c']) {
        const res = await t.api('GET', `/v1/lens/lens-board/render?ticket=${encodeURIComponent(bad)}`, { token: null });
        expect(res.status, bad).to.equal(401);
        expect(res.headers.get('set-cookie')).to.equal(null);
        expect((await viaCookie('/v1/lens/lens-board/render', `svc_render_ticket=${bad}`)).status).to.equal(401);
      }
    });

    it('rule 5: a personal token cannot be passed as a query parameter', async () => {
      for (const key of ['ticket', 'token', 'access_token', 'bearer']) {
        const res = await t.api('GET', `/v1/lens/lens-board/render?${key}=${f.alice.token}`, { token: null });
        expect(res.status, key).to.equal(401);
      }
      expect((await viaCookie('/v1/lens/lens-board/render', `svc_render_ticket=${f.alice.token}`)).status).to.equal(401);
    });

    it('expiry is the only bound: the cookie stops working when the ticket expires, the exchange too', async () => {
      const m = await mint('lens-board', f.alice.token, { expires: '1d' });
      const x = await t.api('GET', m.body.url, { token: null });
      const cookie = cookieFrom(x.headers.get('set-cookie'));
      expect((await viaCookie('/v1/lens/lens-board/render', cookie)).status).to.equal(200);
      t.clock.advance(DAY - 60_000);
      expect((await viaCookie('/v1/lens/lens-board/render', cookie)).status).to.equal(200);
      t.clock.advance(2 * 60_000);
      const expired = await viaCookie('/v1/lens/lens-board/render', cookie);
      expect(expired.status).to.equal(401);
      expect(expired.body.error.code).to.equal('unauthorized');
      expect((await t.api('GET', m.body.url, { token: null })).status).to.equal(401);
    });

    it('a person opening a bad or expired link in a browser gets a readable HTML page, status kept; API clients keep the JSON envelope', async () => {
      const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
      const m = await mint('lens-board', f.alice.token, { expires: '1d' });
      const x = await t.api('GET', m.body.url, { token: null, headers: browser });
      expect(x.status).to.equal(302);
      const cookie = cookieFrom(x.headers.get('set-cookie'));
      const pageOf = async (path: string, headers: Record<string, string>) => {
        const res = await t.api('GET', path, { token: null, headers: { ...browser, ...headers } });
        expect(res.headers.get('content-type')).to.match(/^text\/html/);
        expect(res.text).to.match(/^<!doctype html>/);
        expect(res.text).to.not.include('{"error"');
        return res;
      };
      const bad = await pageOf('/v1/lens/lens-board/render?ticket=garbage', {});
      expect(bad.status).to.equal(401);
      expect(bad.text).to.include('This link is not valid').and.include('unauthorized');
      const unknown = await pageOf('/v1/lens/lens-nothing/render', { cookie });
      expect([401, 404]).to.include(unknown.status);
      const missingLens = await t.api('GET', '/v1/lens/lens-nothing/render', { token: f.alice.token, headers: browser });
      expect(missingLens.status).to.equal(404);
      expect(missingLens.text).to.include('Not found');
      t.clock.advance(DAY + 60_000);
      const expired = await pageOf('/v1/lens/lens-board/render', { cookie });
      expect(expired.status).to.equal(401);
      expect(expired.text).to.include('has expired');
      // the same failures for an API client (fetch's */*, or format=json) are the JSON envelope
      const api = await viaCookie('/v1/lens/lens-board/render', cookie);
      expect(api.status).to.equal(401);
      expect(api.body.error.code).to.equal('unauthorized');
      const asJson = await t.api('GET', '/v1/lens/lens-board/render?format=json', { token: null, headers: { ...browser, cookie } });
      expect(asJson.status).to.equal(401);
      expect(asJson.body.error.code).to.equal('unauthorized');
    });

    it('a bearer request carrying a ticket is exchanged too (the ticket never renders from a URL)', async () => {
      const m = await mint('lens-board', f.alice.token);
      const res = await t.api('GET', `${m.body.url}&format=json`, { token: f.bob.token });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/v1/lens/lens-board/render?format=json');
      expect((await t.api('GET', '/v1/lens/lens-board/render?ticket=not-a-ticket', { token: f.bob.token })).status).to.equal(401);
    });
  });
});

describe('lenses: render tickets outlive their sharer being offboarded (expiry is the only bound)', function () {
  let t: TestServer;
  let f: Fixture;
  before(async () => {
    t = await startTestServer();
    f = await seed(t);
  });
  after(() => t.close());

  it('a ticket keeps working after its sharer is offboarded, and the offboarding answer says until when', async () => {
    const m = await t.api('POST', '/v1/lens/lens-board/ticket', { token: f.alice.token, body: { expires: '30d' } });
    expect(m.status, m.text).to.equal(200);
    const x = await t.api('GET', m.body.url, { token: null });
    expect(x.status).to.equal(302);
    const cookie = cookieFrom(x.headers.get('set-cookie'));

    const off = await t.api('DELETE', `/v1/admin/people/${f.alice.id}`);
    expect(off.status, off.text).to.equal(200);
    expect(off.body.tokens_revoked).to.be.greaterThan(0);
    expect(off.body.render_tickets)
      .to.match(/not revoked/)
      .and.match(/until it expires/);
    // the answer's bound covers the ticket just minted
    expect(Date.parse(off.body.render_tickets_valid_until)).to.be.at.least(Date.parse(m.body.exp));

    expect((await t.api('GET', '/v1/me', { token: f.alice.token })).status).to.equal(401);
    const still = await t.api('GET', '/v1/lens/lens-board/render?format=json', { token: null, headers: { cookie } });
    expect(still.status, still.text).to.equal(200);
    expect(still.body.sharer.id).to.equal(f.alice.id);
    t.clock.advance(30 * DAY + 60_000);
    expect((await t.api('GET', '/v1/lens/lens-board/render?format=json', { token: null, headers: { cookie } })).status).to.equal(401);
  });
});
