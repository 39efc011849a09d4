/**
 * Writes docs/screenshots/*.png: every app page at 1280x800 and the queue and node pages at a
 * phone width (390x844), from a real server with the tests' seed graph, in Chromium.
 *
 *   npm run screenshots
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { addPerson, startTestServer } from '../../helpers/harness.js';
import { ROOT } from '../../helpers/processes.js';
import { launch, signIn } from './browser.js';
import { PAGES } from './pages-list.js';
import { seedGraph } from './seed.js';

async function main(): Promise<void> {
  const out = join(ROOT, 'docs', 'screenshots');
  mkdirSync(out, { recursive: true });
  const t = await startTestServer();
  const browser = await launch();
  try {
    await seedGraph(t);
    const bob = await addPerson(t, 'Bob Builder');
    // some history and progress to look at
    await t.api('POST', '/v1/nodes/task-docs/status', { token: bob.token, body: { status: 'done' } });
    await t.api('POST', '/v1/nodes/task-login/claim', { token: bob.token });
    await t.api('POST', '/v1/nodes/issue-crash/status', { body: { status: 'in-progress' } });
    // Bob's inbox: a question routed to him, a review requested of him, a mention
    await t.api('POST', `/v1/nodes/${bob.id}/edges`, { body: { type: 'stewards', to: 'task-launch' } });
    await t.api('POST', '/v1/questions', { body: { text: 'Which DNS provider do we launch on?', mentions: ['task-launch'] } });
    await t.api('POST', '/v1/nodes/task-signup/edges', { body: { type: 'review-requested', to: bob.id } });
    await t.api('POST', '/v1/nodes/dec-cdn/edges', { body: { type: 'mentions', to: bob.id } });
    // the operator console has something to show: an agent with a published host, a webhook
    const agent = (await t.api('POST', '/v1/agents', { token: bob.token, body: { label: 'Build bot' } })).body.id as string;
    await t.api('POST', `/v1/agents/${agent}/token`, { token: bob.token, body: { standing: true, label: 'ci' } });
    await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: bob.token,
      body: { harnesses: ['claude-code'], skills: ['pdf.read'] },
    });
    await t.api('POST', '/v1/webhooks', { body: { url: 'https://ci.example.com/hooks/workgraph', types: ['node.*'], description: 'CI' } });
    const shots: Array<{ file: string; path: string; width: number; height: number; signedIn: boolean; admin?: boolean }> = [
      { file: 'signin', path: '/app/signin', width: 1280, height: 800, signedIn: false },
      ...PAGES.map((p) => ({ file: p.name, path: p.path, width: 1280, height: 800, signedIn: true, admin: p.admin })),
      { file: 'history-entry', path: '', width: 1280, height: 800, signedIn: true },
      { file: 'phone-queue', path: '/app/queue', width: 390, height: 844, signedIn: true },
      { file: 'phone-node', path: '/app/nodes/task-login', width: 390, height: 844, signedIn: true },
      { file: 'phone-board', path: '/app/board?project=proj-web&type=task', width: 390, height: 844, signedIn: true },
    ];
    const history = await t.api('GET', '/v1/nodes/task-login/history', { token: bob.token });
    shots.find((s) => s.file === 'history-entry')!.path = `/app/nodes/task-login/history/${history.body.history[0].sha}`;
    const ticket = await t.api('POST', '/v1/lens/lens-open-work/ticket', { body: { label: 'weekly review' } });
    shots.push({
      file: 'shared-view',
      path: `/app/views/lens-open-work?ticket=${ticket.body.ticket}`,
      width: 1280,
      height: 800,
      signedIn: false,
    });
    // the one-time sign-in link's page (its secret in the fragment, as an invited person opens it)
    const invite = new URL((await t.api('POST', `/v1/admin/people/${bob.id}/invite`)).body.url);
    shots.push({ file: 'invite', path: `${invite.pathname}${invite.hash}`, width: 1280, height: 800, signedIn: false });
    for (const s of shots) {
      const context = await browser.newContext({ viewport: { width: s.width, height: s.height } });
      const page = s.signedIn ? await signIn(t, context, s.admin ? t.adminToken : bob.token) : await context.newPage();
      await page.goto(t.url + s.path);
      await page.waitForLoadState('networkidle');
      await page.waitForTimeout(400);
      await page.screenshot({ path: join(out, `${s.file}.png`) });
      console.log(`docs/screenshots/${s.file}.png`);
      await context.close();
    }
  } finally {
    await browser.close();
    await t.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
