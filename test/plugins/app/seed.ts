/**
 * A small, realistic graph for the app's tests and screenshots: a program with a gating
 * tree, tasks and issues with markdown bodies and edges, a proposed decision, a lens, a
 * proposed schema node.
 */
import { putNodes, type TestServer } from '../../helpers/harness.js';

export async function seedGraph(t: TestServer): Promise<void> {
  await putNodes(t, [
    { id: 'proj-web', type: 'proj', title: 'Web relaunch', summary: 'Relaunch the public web site on the new stack' },
    {
      id: 'task-login',
      title: 'Fix the login redirect loop',
      summary: 'Users who sign in from a deep link land on the sign-in page again',
      project: 'proj-web',
      body: '## Steps\n\n1. Open a deep link while signed out\n2. Sign in\n3. See the sign-in page again\n\nThe cookie path is `/app`, see the [design note](https://example.test/design).\n\n```ts\nredirect(next ?? "/");\n```\n',
    },
    {
      id: 'task-signup',
      title: 'New sign-up form',
      summary: 'A shorter sign-up form with email verification',
      project: 'proj-web',
      edges: [{ type: 'blocks', to: 'task-launch' }],
    },
    {
      id: 'task-launch',
      title: 'Launch the new site',
      summary: 'Switch DNS to the new stack and announce it',
      project: 'proj-web',
      edges: [{ type: 'part-of', to: 'proj-web' }],
    },
    {
      id: 'issue-crash',
      title: 'Crash on empty search',
      summary: 'The search page crashes when the query is empty',
      project: 'proj-web',
      edges: [{ type: 'blocks', to: 'task-launch' }],
    },
    { id: 'dec-cdn', title: 'Use a CDN for static files', summary: 'Serve static files from a CDN to cut latency', project: 'proj-web' },
    {
      id: 'task-docs',
      title: 'Write the operator guide',
      summary: 'Document deployment and backups',
      project: 'proj-web',
      edges: [{ type: 'relates-to', to: 'task-launch' }],
    },
    {
      id: 'lens-open-work',
      type: 'lens',
      title: 'Open work',
      summary: 'Tasks and issues that are not done, by status',
      query: { type: ['task', 'issue'], status: ['open', 'in-progress', 'blocked', 'review'] },
      columns: ['id', 'title', 'status', 'priority'],
      group_by: 'status',
      sort: ['-priority', 'id'],
    },
  ]);
  // a schema proposal by the admin (issue 25 item 5): the schema pages show it, another person may approve it
  await putNodes(t, [
    {
      id: 'schema-task-review-gate',
      type: 'schema',
      title: 'Tasks go through review',
      summary: 'Tasks may only move to done from review',
      applies_to: 'task',
      hooks: {
        transition:
          "(input) => input.to !== 'done' || input.from === 'review'\n  ? { allow: true }\n  : { allow: false, reason: 'move to review first' }",
      },
      body: 'Work is reviewed before it is done.\n',
    },
  ]);
  await t.api('POST', '/v1/nodes/task-login/edges', { body: { type: 'blocks', to: 'task-launch' } });
  await t.api('POST', '/v1/nodes/task-login/priority', { body: { priority: 'p1' } });
  await t.api('POST', '/v1/nodes/issue-crash/priority', { body: { priority: 'p2' } });
}
