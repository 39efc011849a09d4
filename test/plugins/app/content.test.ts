/**
 * What the app's pages show, checked in their HTML: queue sections, filters and paging; a
 * node's resolution, open findings, supersession, sanitized body; program progress; search.
 */
import { expect } from 'chai';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { seedGraph } from './seed.js';

async function session(t: TestServer, token: string): Promise<(path: string) => Promise<{ status: number; text: string }>> {
  const page = await fetch(`${t.url}/app/signin`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const res = await fetch(`${t.url}/app/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `svc_app_csrf=${csrf}` },
    body: new URLSearchParams({ csrf, token, next: '/app/queue' }).toString(),
    redirect: 'manual',
  });
  const cookie = /svc_app_session=[^;]+/.exec(res.headers.getSetCookie().join('\n'))![0];
  return async (path) => {
    const r = await fetch(t.url + path, { headers: { cookie }, redirect: 'manual' });
    return { status: r.status, text: await r.text() };
  };
}

describe('app: what the pages show', function () {
  this.timeout(60_000);
  let t: TestServer;
  let bob: { id: string; token: string };
  let get: (path: string) => Promise<{ status: number; text: string }>;

  before(async () => {
    t = await startTestServer();
    await seedGraph(t);
    bob = await addPerson(t, 'Bob Builder');
    get = await session(t, bob.token);
  });
  after(async () => {
    await t?.close();
  });

  it('queue: the sections asked and reviews, a type filter, and paging over 50 items', async () => {
    const asked = await t.api('POST', '/v1/questions', {
      token: bob.token,
      body: { text: 'Which CDN do we pick for the launch?', title: 'Which CDN?' },
    });
    expect(asked.status).to.equal(201);
    await t.api('POST', '/v1/nodes/task-docs/edges', { body: { type: 'review-requested', to: bob.id } });
    let page = await get('/app/queue');
    expect(page.text)
      .to.match(/Questions I asked \(1\)/)
      .and.include(`/app/nodes/${asked.body.id}`);
    expect(page.text).to.match(/Reviews requested \(1\)/);

    page = await get('/app/queue?type=issue');
    expect(page.text).to.include('/app/nodes/issue-crash').and.not.include('href="/app/nodes/task-login"');
    expect(page.text).to.match(/<option value="issue" selected>/);

    await putNodes(
      t,
      Array.from({ length: 60 }, (_, i) => ({ id: `task-bulk-${i}`, summary: `Bulk task ${i}` })),
    );
    page = await get('/app/queue?type=task');
    const total = Number(/Items 1-50 of (\d+)/.exec(page.text)?.[1]);
    expect(total).to.be.greaterThan(60);
    expect(page.text).to.include('href="/app/queue?type=task&amp;offset=50" rel="next"');
    page = await get('/app/queue?type=task&offset=50');
    expect(page.text).to.include(`Items 51-${total} of ${total}`).and.include('rel="prev"').and.not.include('rel="next"');
  });

  it('node: resolution, open findings and supersession are shown; the body is sanitized', async () => {
    await putNodes(t, [
      {
        id: 'task-fixed',
        summary: 'Something that got fixed',
        body: '<script>window.bad=1</script>\n\n[click](javascript:alert(1))\n\n<img src=x onerror="alert(1)">\n\n**kept**',
      },
      { id: 'issue-fixer', summary: 'The fix', edges: [{ type: 'resolves', to: 'task-fixed' }] },
      { id: 'task-old', summary: 'The old plan' },
      { id: 'task-new', summary: 'The new plan', edges: [{ type: 'supersedes', to: 'task-old' }] },
    ]);
    await t.api('POST', '/v1/gardener', {});
    let page = await get('/app/nodes/task-fixed');
    expect(page.text).to.match(/Resolved by <a href="\/app\/nodes\/issue-fixer">The fix<\/a>/);
    expect(page.text).to.include('the resolution wins');
    const markdown = page.text.slice(page.text.indexOf('<div class="markdown">'), page.text.indexOf('<details>'));
    expect(markdown).to.include('<strong>kept</strong>');
    for (const bad of ['<script', 'javascript:', 'onerror']) expect(markdown).to.not.include(bad);
    page = await get('/app/nodes/task-old');
    expect(page.text).to.match(/Superseded by <a href="\/app\/nodes\/task-new">/);
    // the gardener filed a lagging-resolution finding about task-fixed (resolved, still open)
    const finding = (await t.api('GET', '/v1/nodes/task-fixed')).body.open_findings[0];
    page = await get('/app/nodes/task-fixed');
    expect(page.text).to.include('Open findings').and.include(`/app/nodes/${finding.id}`);
  });

  it('program page: the gating tree with its progress', async () => {
    await t.api('POST', '/v1/nodes/task-login/status', { body: { status: 'done' } });
    const page = await get('/app/programs/task-launch');
    expect(page.status).to.equal(200);
    const program = (await t.api('GET', '/v1/program/task-launch')).body;
    expect(page.text).to.include(`${program.progress.done}/${program.progress.total} done`);
    for (const b of program.blockers) expect(page.text).to.include(`/app/nodes/${b.id}`);
    expect(page.text).to.match(/<progress max="100" value="\d+"/);
  });

  it('search ranks by the digest relevance and escapes the query', async () => {
    const page = await get('/app/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E+sign-up');
    expect(page.status).to.equal(200);
    expect(page.text).to.not.include('<script>alert(1)');
    expect(page.text).to.include('value="&lt;script&gt;alert(1)&lt;/script&gt; sign-up"');
    const found = await get('/app/search?q=email+verification');
    expect(found.text).to.include('/app/nodes/task-signup');
  });
});
