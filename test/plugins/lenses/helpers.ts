/**
 * Shared fixtures of the lens tests: a server with core (+ leases) + lenses, a small graph of
 * work nodes across two projects, and a handful of lens definitions.
 */
import { expect } from 'chai';
import type { ServerConfig } from '../../../kernel/config.js';
import type { PluginDef } from '../../../kernel/plugin.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { lensesPlugin } from '../../../plugins/lenses/index.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';

export const DAY = 24 * 60 * 60 * 1000;

export async function startLensServer(opts: { leases?: boolean; config?: Partial<ServerConfig> } = {}): Promise<TestServer> {
  const plugins: PluginDef[] = [corePlugin, ...(opts.leases === false ? [] : [leasesPlugin]), lensesPlugin];
  return startTestServer({ plugins, ...(opts.config ? { config: opts.config } : {}) });
}

/** YAML frontmatter for a node, values as JSON (valid YAML flow). */
export function nodeMd(fm: Record<string, unknown>, body = ''): string {
  return `---\n${Object.entries(fm)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join('\n')}\n---\n${body}`;
}

export async function put(t: TestServer, nodes: Array<Record<string, unknown>>, token?: string): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', { token, body: { nodes: nodes.map((n) => nodeMd(n)) } });
  expect(res.status, res.text).to.equal(200);
}

export async function post(t: TestServer, path: string, body: unknown, token?: string) {
  const res = await t.api('POST', path, { token, body });
  return res;
}

export const XSS_TITLE = '<script>alert("x")</script> & friends';

export interface Fixture {
  alice: { id: string; token: string };
  bob: { id: string; token: string };
}

/**
 * Work nodes: web has task-a (open, p1, alice), task-b (in-progress, p2, bob), issue-d (open,
 * p3); api has task-c (done), issue-e (blocked); task-f blocks task-release (no project);
 * task-xss (open, web) carries a hostile title. Lenses: see `LENSES`.
 */
export async function seed(t: TestServer): Promise<Fixture> {
  const alice = await addPerson(t, 'Alice');
  const bob = await addPerson(t, 'Bob');
  await put(t, [
    { id: 'task-a', type: 'task', summary: 'Alpha task', project: 'web', edges: [{ type: 'assigned', to: alice.id }] },
    { id: 'task-b', type: 'task', summary: 'Bravo task', project: 'web', edges: [{ type: 'assigned', to: bob.id }] },
    { id: 'task-c', type: 'task', summary: 'Charlie task', project: 'api', edges: [{ type: 'assigned', to: alice.id }] },
    { id: 'issue-d', type: 'issue', summary: 'Delta issue', project: 'web' },
    { id: 'issue-e', type: 'issue', summary: 'Echo issue', project: 'api' },
    { id: 'task-release', type: 'task', summary: 'Release' },
    { id: 'task-f', type: 'task', summary: 'Foxtrot blocks the release', edges: [{ type: 'blocks', to: 'task-release' }] },
    { id: 'task-xss', type: 'task', title: XSS_TITLE, summary: 'hostile title', project: 'web' },
    { id: 'dec-g', type: 'dec', summary: 'Golf decision', project: 'web' },
  ]);
  for (const [id, status] of [
    ['task-b', 'in-progress'],
    ['task-c', 'done'],
    ['issue-e', 'blocked'],
  ] as const) {
    const res = await post(t, `/v1/nodes/${id}/status`, { status }, id === 'task-b' ? bob.token : undefined);
    expect(res.status, res.text).to.equal(200);
  }
  for (const [id, priority] of [
    ['task-a', 'p1'],
    ['task-b', 'p2'],
    ['issue-d', 'p3'],
  ] as const) {
    const res = await post(t, `/v1/nodes/${id}/priority`, { priority });
    expect(res.status, res.text).to.equal(200);
  }
  await put(t, LENSES);
  const retired = await post(t, '/v1/nodes/lens-retired/status', { status: 'retired' });
  expect(retired.status, retired.text).to.equal(200);
  return { alice, bob };
}

export const LENSES: Array<Record<string, unknown>> = [
  {
    id: 'lens-board',
    type: 'lens',
    title: 'Work board',
    summary: 'Tasks and issues by status',
    query: { type: ['task', 'issue'], project: '$project' },
    columns: ['id', 'title', 'status', 'priority', 'assignee', 'project'],
    group_by: 'status',
    sort: ['-priority', 'id'],
    params: { project: 'proj-root' },
  },
  {
    id: 'lens-mine',
    type: 'lens',
    title: 'My open work',
    summary: 'What I carry',
    query: { assignee: 'me', done: false },
    columns: ['id', 'title', 'status'],
  },
  {
    id: 'lens-release-blockers',
    type: 'lens',
    summary: 'What blocks the release',
    query: { edge: { type: 'blocks', to: 'task-release' } },
    columns: ['id', 'title'],
  },
  {
    id: 'lens-blocked-by-f',
    type: 'lens',
    summary: 'What task-f blocks (inverse edge form)',
    query: { edge: { type: 'blocked-by', to: 'task-f' } },
  },
  {
    id: 'lens-status',
    type: 'lens',
    summary: 'Work by a status param (no default)',
    query: { type: 'task', status: '$status' },
    columns: ['id', 'status'],
    sort: ['id'],
  },
  {
    id: 'lens-xss',
    type: 'lens',
    title: '<img src=x onerror=alert(1)> lens',
    summary: 'hostile lens title',
    query: { type: 'task', project: 'web' },
    columns: ['id', 'title', 'status'],
  },
  {
    id: 'lens-prio-only',
    type: 'lens',
    summary: 'A lens that allows only priority changes',
    query: { type: ['task', 'issue'] },
    actions: ['set_priority'],
  },
  {
    id: 'lens-broken',
    type: 'lens',
    summary: 'A lens with a typo in its query',
    query: { colour: 'red', type: 'widget' },
    group_by: 'mood',
  },
  {
    id: 'lens-retired',
    type: 'lens',
    summary: 'An old lens',
    status: 'active',
    query: { type: 'task' },
  },
];

export function ids(tree: { groups: Array<{ items: Array<{ id: string }> }> }): string[] {
  return tree.groups.flatMap((g) => g.items.map((i) => i.id));
}

/** The cookie a 302 exchange set, as a request Cookie header value. */
export function cookieFrom(setCookie: string | null): string {
  expect(setCookie, 'set-cookie header').to.be.a('string');
  return setCookie!.split(';')[0]!;
}
