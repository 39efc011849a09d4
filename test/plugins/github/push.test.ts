/**
 * Pushes link their commits (plugins/github/handlers/push.ts): GitHub's published `push`
 * examples with the commit messages naming this tenant's nodes, signed and posted to the real
 * webhook route. Every commit links to the nodes it names; on the default branch a closing
 * reference finishes its node; another branch only links; tags and unknown ids do nothing.
 */
import { expect } from 'chai';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { deliver, example, linkRepo, node } from './code-helpers.js';

const SHA_A = 'a10867b14bb761a232cd80139fbd4c0d33264240';
const SHA_B = 'b20867b14bb761a232cd80139fbd4c0d33264241';

/** GitHub's example push to `master` with one commit, re-aimed at `branch` with the given commits. */
function push(branch: string, commits: Array<{ id: string; message: string }>) {
  const payload = example('push', undefined, (e) => e.ref === 'refs/heads/master' && Array.isArray(e.commits) && e.commits.length === 1);
  payload.ref = `refs/heads/${branch}`;
  const template = (payload.commits as Array<Record<string, unknown>>)[0]!;
  const adapted = commits.map((c) => ({ ...structuredClone(template), id: c.id, message: c.message }));
  payload.commits = adapted;
  payload.head_commit = adapted.at(-1) ?? null;
  return payload;
}

describe('github: pushes link commits', function () {
  let t: TestServer;

  before(async () => {
    t = await startTestServer();
    await putNodes(t, [
      { id: 'issue-null-pointer', summary: 'A null pointer on save' },
      { id: 'task-save-flow', summary: 'Rework the save flow' },
      { id: 'task-feature-work', summary: 'Work on a feature branch' },
    ]);
    await linkRepo(t);
  });
  after(() => t.close());

  it('on the default branch: each commit links to the nodes it names; Fixes also resolves and finishes the node', async () => {
    const { res } = await deliver(
      t,
      'push',
      push('master', [
        { id: SHA_A, message: 'Guard the save handler\n\nFixes issue-null-pointer\nRefs task-save-flow' },
        { id: SHA_B, message: 'Tidy up (refs task-save-flow, task-not-here)' },
      ]),
    );
    expect(res.status).to.equal(202);
    const bug = await node(t, 'issue-null-pointer');
    expect(bug.frontmatter.commits).to.deep.equal([`hello-world@${SHA_A}`]);
    expect(bug.frontmatter.status).to.equal('resolved');
    const repo = await node(t, 'repo-hello-world');
    expect(repo.frontmatter.edges).to.deep.include({ type: 'resolves', to: 'issue-null-pointer', sha: SHA_A });
    const flow = await node(t, 'task-save-flow');
    expect(flow.frontmatter.commits).to.deep.equal([`hello-world@${SHA_A}`, `hello-world@${SHA_B}`]);
    expect(flow.frontmatter.status).to.equal('open');
  });

  it('a closing reference to a type the mappings do not close (a spec) only links the commit', async () => {
    await putNodes(t, [{ id: 'spec-save-format', summary: 'The save format' }]);
    await deliver(t, 'push', push('master', [{ id: SHA_B, message: 'Implement it (fixes spec-save-format)' }]));
    const spec = await node(t, 'spec-save-format');
    expect(spec.frontmatter.status).to.equal('draft');
    expect(spec.frontmatter.commits).to.deep.equal([`hello-world@${SHA_B}`]);
    const repo = await node(t, 'repo-hello-world');
    expect((repo.frontmatter.edges ?? []).filter((e) => e.to === 'spec-save-format')).to.deep.equal([]);
  });

  it('on another branch a closing reference only links the commit', async () => {
    await deliver(t, 'push', push('feature/save', [{ id: SHA_B, message: 'Fixes task-feature-work' }]));
    const work = await node(t, 'task-feature-work');
    expect(work.frontmatter.commits).to.deep.equal([`hello-world@${SHA_B}`]);
    expect(work.frontmatter.status).to.equal('open');
  });

  it('tags, and commits that name no node of this tenant, change nothing and do not fail the delivery', async () => {
    const before = (await node(t, 'task-save-flow')).revision;
    const tag = example('push', undefined, (e) => typeof e.ref === 'string' && e.ref.startsWith('refs/tags/'));
    await deliver(t, 'push', tag);
    await deliver(t, 'push', push('master', [{ id: SHA_A, message: 'Fixes task-nowhere, closes #12 and refs owner/repo#3' }]));
    expect((await node(t, 'task-save-flow')).revision).to.equal(before);
  });

  it('the same push delivered again links nothing twice', async () => {
    const before = (await node(t, 'task-save-flow')).revision;
    await deliver(t, 'push', push('master', [{ id: SHA_B, message: 'Tidy up (refs task-save-flow)' }]));
    expect((await node(t, 'task-save-flow')).revision).to.equal(before);
  });

  it("a closing reference meets set_status's transition gate: a schema that finishes tasks only from review keeps the node open, the resolves edge records the commit, the delivery succeeds", async () => {
    const gate = `(input) => input.to !== 'done' || input.from === 'review' ? { allow: true } : { allow: false, reason: 'move to review first' }`;
    await putNodes(t, [
      md(
        {
          id: 'schema-gh-review-gate',
          type: 'schema',
          status: 'proposed',
          summary: 'Finish tasks from review',
          applies_to: 'task',
          hooks: { transition: gate },
        },
        'Why.\n',
      ),
    ]);
    // a schema becomes active by another identity than its author
    const keeper = await addPerson(t, 'Gate Keeper', { admin: true });
    const activated = await t.api('POST', '/v1/nodes/schema-gh-review-gate/status', { token: keeper.token, body: { status: 'active' } });
    expect(activated.status, activated.text).to.equal(200);
    await putNodes(t, [{ id: 'task-gated', summary: 'Work the gate holds' }]);
    await deliver(t, 'push', push('master', [{ id: SHA_A, message: 'Fixes task-gated' }]));
    const gated = await node(t, 'task-gated');
    expect(gated.frontmatter.status).to.equal('open');
    expect(gated.frontmatter.commits).to.deep.equal([`hello-world@${SHA_A}`]);
    const repo = await node(t, 'repo-hello-world');
    expect(repo.frontmatter.edges).to.deep.include({ type: 'resolves', to: 'task-gated', sha: SHA_A });
    expect(t.logs.some((l) => l.includes('a change from GitHub was refused') && l.includes('transition_denied'))).to.equal(true);
  });
});
