/**
 * docs/api.md's first walk is run as written, with bash and curl, against a real server: the
 * getting-started guide cannot drift from the API.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { startTestServer, type TestServer } from '../../helpers/harness.js';

const run = promisify(execFile);

export function walkScript(): string {
  const text = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const block = /<!-- walk:start[^>]*-->\s*```sh\n([\s\S]*?)```\s*<!-- walk:end -->/.exec(text);
  if (!block) throw new Error('docs/api.md has no walk block');
  return block[1]!;
}

describe('docs/api.md: the getting-started walk', function () {
  this.timeout(60_000);
  let t: TestServer;

  before(async () => {
    t = await startTestServer();
  });

  after(async () => {
    await t?.close();
  });

  it('runs as written: create, queue, claim, done, history', async () => {
    expect(existsSync(`${t.dataDir}/admin-token`)).to.equal(true);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', walkScript()], {
      env: { PATH: process.env.PATH, BASE: t.url, SVC_DATA_DIR: t.dataDir },
    });
    const answers = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    expect(answers).to.have.length(6);
    const [me, created, queue, claim, done, history] = answers;
    expect(me).to.include({ person: t.adminPerson, org: t.org });
    expect(created.results[0]).to.include({ status: 'created', id: 'task-first-steps' });
    expect(queue.items.map((i: { id: string }) => i.id)).to.include('task-first-steps');
    expect(claim).to.include({ ok: true });
    expect(claim.lease.node_id).to.equal('task-first-steps');
    expect(done).to.include({ status: 'updated', id: 'task-first-steps' });
    expect(history.id).to.equal('task-first-steps');
    expect(history.count).to.be.at.least(3);
    const node = await t.api('GET', '/v1/nodes/task-first-steps');
    expect(node.body.frontmatter.status).to.equal('done');
  });
});
