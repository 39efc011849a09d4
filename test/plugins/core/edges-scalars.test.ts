import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';

describe('core: edges, status, priority, readiness, commit links', () => {
  let t: TestServer;
  let bob: { id: string; token: string };
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
    bob = await addPerson(t, 'Bob');
    await putNodes(t, [
      { id: 'task-a', type: 'task', summary: 'A' },
      { id: 'task-b', type: 'task', summary: 'B' },
      { id: 'task-c', type: 'task', summary: 'C' },
      { id: 'dec-x', type: 'dec', summary: 'A decision' },
    ]);
  });
  after(async () => t.close());

  const edgesOf = async (id: string) => (await t.api('GET', `/v1/nodes/${id}`)).body.frontmatter.edges ?? [];

  describe('POST/DELETE /v1/nodes/{id}/edges', () => {
    it('adds a canonical edge, then an identical one is skipped', async () => {
      const res = await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'blocks', to: 'task-b' } });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ status: 'updated', id: 'task-a' });
      expect(res.body.revision).to.match(/^[0-9a-f]{40}$/);
      expect(res.body.warnings).to.deep.equal([]);
      const again = await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'blocks', to: 'task-b' } });
      expect(again.body.status).to.equal('skipped');
      expect(await edgesOf('task-a')).to.deep.equal([{ type: 'blocks', to: 'task-b' }]);
    });

    it('flips an inverse form onto the target as the canonical edge, with a warning', async () => {
      const res = await t.api('POST', '/v1/nodes/task-c/edges', { body: { type: 'blocked-by', to: 'task-a' } });
      expect(res.body).to.include({ status: 'updated', id: 'task-a' });
      expect(res.body.warnings[0]).to.match(/inverse form 'blocked-by' written as 'blocks' on task-a/);
      expect(await edgesOf('task-a')).to.deep.include({ type: 'blocks', to: 'task-c' });
      expect(await edgesOf('task-c')).to.deep.equal([]);
    });

    it('normalizes aliases (depends-on = blocked-by)', async () => {
      const res = await t.api('POST', '/v1/nodes/task-b/edges', { body: { type: 'depends-on', to: 'task-c' } });
      expect(res.body.id).to.equal('task-c');
      expect(await edgesOf('task-c')).to.deep.include({ type: 'blocks', to: 'task-b' });
    });

    it('upserts attributes: identical skipped, different replaced whole, none leaves them', async () => {
      const first = await t.api('POST', '/v1/nodes/task-b/edges', {
        body: { type: 'relates-to', to: 'dec-x', attrs: { kind: 'found-during', weight: 'high' } },
      });
      expect(first.body.status).to.equal('updated');
      const same = await t.api('POST', '/v1/nodes/task-b/edges', {
        body: { type: 'relates-to', to: 'dec-x', attrs: { weight: 'high', kind: 'found-during' } },
      });
      expect(same.body.status).to.equal('skipped');
      const plain = await t.api('POST', '/v1/nodes/task-b/edges', { body: { type: 'relates-to', to: 'dec-x' } });
      expect(plain.body.status).to.equal('skipped');
      const changed = await t.api('POST', '/v1/nodes/task-b/edges', {
        body: { type: 'relates-to', to: 'dec-x', attrs: { kind: 'follow-up' } },
      });
      expect(changed.body.status).to.equal('updated');
      expect(await edgesOf('task-b')).to.deep.equal([{ type: 'relates-to', to: 'dec-x', kind: 'follow-up' }]);
    });

    it('review edges are exclusive per person: a new one replaces its sibling in place with a flip warning', async () => {
      await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'review-requested', to: bob.id } });
      const res = await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'approved-by', to: bob.id } });
      expect(res.body.status).to.equal('updated');
      expect(res.body.warnings).to.deep.equal([`flipped review-requested -> approved-by for ${bob.id}`]);
      const edges = await edgesOf('task-a');
      expect(edges.filter((e: { to: string }) => e.to === bob.id)).to.deep.equal([{ type: 'approved-by', to: bob.id }]);
    });

    it('rejects bad input: unknown type 422, missing node 404, bad attrs 422, reserved attr names 422', async () => {
      expect((await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'likes', to: 'task-b' } })).status).to.equal(422);
      expect((await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'blocks', to: 'task-zzz' } })).status).to.equal(404);
      expect((await t.api('POST', '/v1/nodes/task-zzz/edges', { body: { type: 'blocks', to: 'task-a' } })).status).to.equal(404);
      expect(
        (await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'blocks', to: 'task-b', attrs: { note: 'has spaces' } } })).status,
      ).to.equal(422);
      expect(
        (await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'blocks', to: 'task-b', attrs: { to: 'x' } } })).status,
      ).to.equal(422);
      expect((await t.api('POST', '/v1/nodes/task-a/edges', { body: { type: 'blocks', to: 'Bad Id' } })).status).to.equal(422);
    });

    it('removes edges by canonical or inverse form; a missing edge is skipped', async () => {
      const res = await t.api('DELETE', '/v1/nodes/task-c/edges', { body: { type: 'blocked-by', to: 'task-a' } });
      expect(res.body).to.include({ status: 'updated', id: 'task-a' });
      expect(await edgesOf('task-a')).to.not.deep.include({ type: 'blocks', to: 'task-c' });
      const again = await t.api('DELETE', '/v1/nodes/task-c/edges', { body: { type: 'blocked-by', to: 'task-a' } });
      expect(again.body.status).to.equal('skipped');
    });
  });

  describe('POST /v1/nodes/{id}/status', () => {
    it('moves through the transition gate and denies illegal moves with 409 transition_denied and the reason', async () => {
      const ok = await t.api('POST', '/v1/nodes/dec-x/status', { body: { status: 'accepted' } });
      expect(ok.body.status).to.equal('updated');
      const denied = await t.api('POST', '/v1/nodes/dec-x/status', { body: { status: 'proposed' } });
      expect(denied.status).to.equal(409);
      expect(denied.body.error.code).to.equal('transition_denied');
      expect(denied.body.error.message).to.contain("cannot move from 'accepted' to 'proposed'");
      expect((await t.api('GET', '/v1/nodes/dec-x')).body.frontmatter.status).to.equal('accepted');
    });
    it('the same status again is skipped; unknown node 404', async () => {
      expect((await t.api('POST', '/v1/nodes/dec-x/status', { body: { status: 'accepted' } })).body.status).to.equal('skipped');
      expect((await t.api('POST', '/v1/nodes/task-nope/status', { body: { status: 'done' } })).status).to.equal(404);
      expect((await t.api('POST', '/v1/nodes/dec-x/status', { body: {} })).status).to.equal(422);
    });
    it('an optional revision echo: the one read moves the node; a stale one is 409 conflict over REST and MCP and changes nothing', async () => {
      await putNodes(t, [{ id: 'task-rev', type: 'task', summary: 'Revision echo' }]);
      const read = (await t.api('GET', '/v1/nodes/task-rev')).body;
      const ok = await t.api('POST', '/v1/nodes/task-rev/status', { body: { status: 'review', revision: read.revision } });
      expect(ok.body).to.include({ status: 'updated', id: 'task-rev' });
      const stale = await t.api('POST', '/v1/nodes/task-rev/status', { body: { status: 'done', revision: read.revision } });
      expect(stale.status).to.equal(409);
      expect(stale.body.error.code).to.equal('conflict');
      expect(stale.body.error.details).to.include({ current_revision: ok.body.revision, supplied_revision: read.revision });
      // even a move to the status it already has: the caller's view was stale
      const same = await t.api('POST', '/v1/nodes/task-rev/status', { body: { status: 'review', revision: read.revision } });
      expect(same.status).to.equal(409);
      const client = await t.mcp();
      const viaMcp = await t.tool(client, 'set_status', { id: 'task-rev', status: 'done', revision: read.revision });
      await client.close();
      expect(viaMcp.isError).to.equal(true);
      expect(viaMcp.text).to.contain('conflict');
      const after = (await t.api('GET', '/v1/nodes/task-rev')).body;
      expect(after.frontmatter.status).to.equal('review');
      expect(after.revision).to.equal(ok.body.revision);
    });
    it('a full put that changes the status goes through the same gate', async () => {
      const read = await t.api('GET', '/v1/nodes/dec-x');
      const markdown = read.body.markdown.replace('status: accepted', 'status: proposed');
      const res = await t.api('POST', '/v1/nodes', {
        body: { nodes: [{ node: markdown, if_exists: 'update', revision: read.body.revision }] },
      });
      expect(res.status).to.equal(207);
      expect(res.body.results[0].error.code).to.equal('transition_denied');
    });
    it('restamps author to the last editor', async () => {
      await t.api('POST', '/v1/nodes/task-c/status', { token: bob.token, body: { status: 'blocked' } });
      const node = await t.api('GET', '/v1/nodes/task-c');
      expect(node.body.frontmatter.author).to.equal(bob.id);
    });
  });

  describe('POST /v1/nodes/{id}/priority and /readiness', () => {
    it('sets p1-p3 with provenance stamps; clearing forms clear; unknown is invalid_node with the allowed list', async () => {
      const res = await t.api('POST', '/v1/nodes/task-a/priority', { token: bob.token, body: { priority: 'p1' } });
      expect(res.body.status).to.equal('updated');
      const fm = (await t.api('GET', '/v1/nodes/task-a')).body.frontmatter;
      expect(fm).to.include({ priority: 'p1', priority_by: bob.id, priority_via: 'rest' });
      expect(Date.parse(fm.priority_at)).to.be.a('number').and.not.NaN;
      expect((await t.api('POST', '/v1/nodes/task-a/priority', { body: { priority: 'p1' } })).body.status).to.equal('skipped');
      for (const clear of ['none', 'clear', '', 'p0']) {
        await t.api('POST', '/v1/nodes/task-a/priority', { body: { priority: 'p2' } });
        const cleared = await t.api('POST', '/v1/nodes/task-a/priority', { body: { priority: clear } });
        expect(cleared.body.status, clear).to.equal('updated');
        expect((await t.api('GET', '/v1/nodes/task-a')).body.frontmatter.priority, clear).to.equal(undefined);
      }
      const bad = await t.api('POST', '/v1/nodes/task-a/priority', { body: { priority: 'urgent' } });
      expect(bad.status).to.equal(422);
      expect(bad.body.error.code).to.equal('invalid_node');
      expect(bad.body.error.details.allowed).to.include.members(['p1', 'p2', 'p3']);
    });

    it('a put keeps the stored priority: it is only set through its endpoint', async () => {
      await t.api('POST', '/v1/nodes/task-b/priority', { body: { priority: 'p3' } });
      const read = await t.api('GET', '/v1/nodes/task-b');
      const markdown = read.body.markdown.replace('priority: p3', 'priority: p1');
      await t.api('POST', '/v1/nodes', { body: { nodes: [{ node: markdown, if_exists: 'update', revision: read.body.revision }] } });
      expect((await t.api('GET', '/v1/nodes/task-b')).body.frontmatter.priority).to.equal('p3');
    });

    it('readiness: only agent may be set; clearing forms; human or other values are invalid_node', async () => {
      const res = await t.api('POST', '/v1/nodes/task-b/readiness', { body: { readiness: 'agent' } });
      expect(res.body.status).to.equal('updated');
      expect((await t.api('GET', '/v1/nodes/task-b')).body.frontmatter).to.include({
        readiness: 'agent',
        readiness_by: t.adminPerson,
        readiness_via: 'rest',
      });
      const human = await t.api('POST', '/v1/nodes/task-b/readiness', { body: { readiness: 'human' } });
      expect(human.status).to.equal(422);
      expect(human.body.error.code).to.equal('invalid_node');
      expect(human.body.error.details.allowed).to.include('agent');
      const cleared = await t.api('POST', '/v1/nodes/task-b/readiness', { body: { readiness: null } });
      expect(cleared.body.status).to.equal('updated');
      expect((await t.api('GET', '/v1/nodes/task-b')).body.frontmatter.readiness).to.equal(undefined);
    });
  });

  describe('POST /v1/nodes/{id}/commits', () => {
    it('appends repo@sha, dedups prefix-aware, upgrades an abbreviated sha', async () => {
      const full = 'abcdef0123456789abcdef0123456789abcdef01';
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-web', sha: 'abcdef0' } })).body.status).to.equal(
        'updated',
      );
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-web', sha: 'abcdef0' } })).body.status).to.equal(
        'skipped',
      );
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-web', sha: full } })).body.status).to.equal('updated');
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-web', sha: 'abcdef01234' } })).body.status).to.equal(
        'skipped',
      );
      expect((await t.api('GET', '/v1/nodes/task-c')).body.frontmatter.commits).to.deep.equal([`repo-web@${full}`]);
    });
    it('rejects malformed shas and repo slugs (422) and caps at 40 links', async () => {
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-web', sha: 'ABCDEF0' } })).status).to.equal(422);
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-web', sha: 'abc12' } })).status).to.equal(422);
      expect((await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'Repo Web', sha: 'abcdef1' } })).status).to.equal(422);
      for (let i = 1; i < 40; i++) {
        const r = await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: `repo-n${i}`, sha: 'a'.repeat(7) } });
        expect(r.body.status).to.equal('updated');
      }
      const over = await t.api('POST', '/v1/nodes/task-c/commits', { body: { repo: 'repo-over', sha: 'b'.repeat(7) } });
      expect(over.status).to.equal(422);
    });
  });
});
