/**
 * The inbox page and the app's stream door over plain HTTP: GET /app/events streams the
 * person's events with the session cookie alone (ids and data, no `event:` lines, resumable
 * with Last-Event-ID), refuses bad parameters with a readable 400 and needs a session; the
 * inbox's mark-read forms need the CSRF token and a well-formed item, and change nothing
 * otherwise.
 */
import { expect } from 'chai';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { seedGraph } from './seed.js';
import { FormClient } from './form-client.js';

/** Reads an SSE response until `done` says the text so far is enough, then aborts it. */
async function readStream(url: string, headers: Record<string, string>, done: (text: string) => boolean, start?: () => Promise<void>) {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  let text = '';
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let started = false;
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      text += decoder.decode(value, { stream: true });
      if (!started && start) {
        started = true;
        await start();
      }
      if (done(text)) break;
    }
  } finally {
    abort.abort();
  }
  return { status: res.status, type: res.headers.get('content-type'), text };
}

describe('app: the inbox and the stream door over HTTP', function () {
  this.timeout(60_000);
  let t: TestServer;
  let bob: { id: string; token: string };
  const b = () => new FormClient(t.url);

  before(async () => {
    t = await startTestServer();
    await seedGraph(t);
    bob = await addPerson(t, 'Bob Builder');
  });
  after(async () => t?.close());

  it('GET /app/events streams events with the session cookie: ids and data, no event names, resumable by Last-Event-ID', async () => {
    const s = b();
    await s.signedIn(bob.token);
    const headers = { cookie: s.header(), accept: 'text/event-stream' };
    const first = await readStream(
      `${t.url}/app/events?node=task-docs`,
      headers,
      (text) => /^data: /m.test(text),
      async () => {
        const r = await t.api('POST', '/v1/nodes/task-docs/claim');
        expect(r.status, r.text).to.equal(200);
      },
    );
    expect(first.status).to.equal(200);
    expect(first.type).to.match(/^text\/event-stream/);
    expect(first.text).to.not.match(/^event:/m);
    const frames = first.text.split('\n\n').filter((f) => /^data: /m.test(f));
    const last = frames.at(-1)!;
    const id = /^id: (\d+)$/m.exec(last)![1]!;
    const event = JSON.parse(/^data: (.*)$/m.exec(last)![1]!);
    // the claim's first event (its assigned edge, or the lease itself)
    expect(event.id).to.equal(Number(id));
    expect(event.type).to.match(/^(edge\.added|lease\.claimed)$/);
    expect(event.nodes[0]).to.equal('task-docs');

    // a change while the page was away comes first on the reconnect
    const r = await t.api('POST', '/v1/nodes/task-docs/release');
    expect(r.status, r.text).to.equal(200);
    const again = await readStream(`${t.url}/app/events?node=task-docs`, { ...headers, 'last-event-id': id }, (text) =>
      /^data: /m.test(text),
    );
    const resumed = JSON.parse(/^data: (.*)$/m.exec(again.text)![1]!);
    expect(resumed.id).to.be.greaterThan(Number(id));
    expect(resumed.nodes).to.include('task-docs');
  });

  it('GET /app/events needs a session and refuses bad parameters with a readable 400', async () => {
    const anon = await fetch(`${t.url}/app/events`, { redirect: 'manual', headers: { accept: 'text/event-stream' } });
    expect(anon.status).to.equal(303);
    expect(anon.headers.get('location')).to.match(/^\/app\/signin/);
    await anon.text();
    const s = b();
    await s.signedIn(bob.token);
    for (const q of ['?since=abc', '?assignee=you', '?token=svc_pat_x', '?since=-1']) {
      const res = await s.request('GET', `/app/events${q}`);
      expect(res.status, `${q}: ${res.text.slice(0, 200)}`).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
    }
    const bad = await s.request('GET', '/app/events?node=BAD!');
    expect(bad.status, bad.text.slice(0, 200)).to.equal(422);
  });

  it('the inbox page lists an item for Bob, the header counts it, and the read forms need CSRF and a real item', async () => {
    const st = await t.api('POST', '/v1/nodes/task-signup/edges', { body: { type: 'review-requested', to: bob.id } });
    expect(st.status, st.text).to.equal(200);
    const s = b();
    await s.signedIn(bob.token);
    let page = await s.request('GET', '/app/inbox');
    for (let i = 0; i < 200 && !page.text.includes('Review requested'); i++) page = await s.request('GET', '/app/inbox');
    expect(page.status).to.equal(200);
    expect(page.text).to.include('Review requested').and.include('href="/app/nodes/task-signup"');
    const count = () => Number(/id="inbox-count"[^>]*>(\d+)</.exec(page.text)![1]);
    const before = count();
    expect(before).to.be.at.least(1);
    const id = /name="id" value="([^"]+)"/.exec(page.text)![1]!;
    const csrf = s.csrfOf(page.text);
    expect((await s.request('POST', '/app/inbox/read', { id })).status).to.equal(403);
    expect((await s.request('POST', '/app/inbox/read', { csrf })).status).to.equal(400);
    expect((await s.request('POST', '/app/inbox/read', { csrf, all: '1', through: 'x' })).status).to.equal(400);
    page = await s.request('GET', '/app/inbox');
    expect(count()).to.equal(before);
    const done = await s.request('POST', '/app/inbox/read', { csrf, id });
    expect(done.status).to.equal(303);
    expect(done.location).to.equal('/app/inbox');
    page = await s.request('GET', '/app/inbox');
    expect(count()).to.equal(before - 1);
    // the count is in the header of every page
    const queue = await s.request('GET', '/app/queue');
    expect(/id="inbox-count"[^>]*>(\d+)</.exec(queue.text)![1]).to.equal(String(before - 1));
  });

  it('a tenant without the inbox plugin: no count and no link in the header, and its inbox page is 404', async () => {
    const tenants = t.server.services.tenants;
    const bare = await tenants.create({
      org: 'bare',
      adminName: 'Bare Admin',
      adminEmail: 'admin@bare.test',
      plugins: ['core', 'leases', 'queue', 'app'],
    });
    await tenants.scan();
    const s = b();
    await s.signedIn(bare.token);
    const page = await s.request('GET', '/app/queue');
    expect(page.status).to.equal(200);
    expect(page.text).to.not.include('inbox-count').and.not.include('href="/app/inbox"');
    expect((await s.request('GET', '/app/inbox')).status).to.equal(404);
  });
});
