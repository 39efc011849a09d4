import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { inflateSync } from 'node:zlib';
import { hashToken } from '../../../kernel/auth.js';
import { md, startTestServer, type TestServer } from '../../helpers/harness.js';
import { createAgent, createPerson, plugins } from './helpers.js';
import { onPostgres } from '../../helpers/harness.js';

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** Every readable form of a file: its raw bytes and, when it is zlib data (loose git objects), the inflated bytes. */
function contentsOf(file: string): Buffer[] {
  const raw = readFileSync(file);
  const forms = [raw];
  try {
    forms.push(inflateSync(raw));
  } catch {
    /* not zlib */
  }
  return forms;
}

/** Every object of every repository under the data dir, decompressed by git itself (covers packs too). */
function gitObjects(dataDir: string): Buffer {
  const tenants = join(dataDir, 'tenants');
  return Buffer.concat(
    readdirSync(tenants).map((org) =>
      execFileSync('git', ['--git-dir', join(tenants, org, 'graph.git'), 'cat-file', '--batch-all-objects', '--batch'], {
        maxBuffer: 256 * 1024 * 1024,
      }),
    ),
  );
}

describe('identity: no plaintext token is ever stored or logged', () => {
  let t: TestServer;
  const minted: Record<string, string> = {};

  before(async () => {
    t = await startTestServer({ plugins, keepData: true });
    const member = await createPerson(t, 'Secret Keeper');
    minted.adminMinted = member.token;
    minted.ownPat = (await t.api('POST', '/v1/me/tokens', { token: member.token, body: { label: 'own' } })).body.token;
    const agent = await createAgent(t, member.token, 'Secret Agent');
    minted.sessionDeferred = (await t.api('POST', `/v1/agents/${agent}/token`, { token: member.token, body: {} })).body.token;
    minted.sessionBound = (
      await t.api('POST', `/v1/agents/${agent}/token`, { token: member.token, body: { session: 'run-1' } })
    ).body.token;
    minted.standing = (
      await t.api('POST', `/v1/agents/${agent}/token`, { token: member.token, body: { standing: true, label: 'ci' } })
    ).body.token;
    for (const token of Object.values(minted)) expect(token, JSON.stringify(minted)).to.match(/^svc_(pat|ast)_/);
    // use every token: binding, writes, capability publishing, listings (last_used gets written)
    await t.api('POST', '/v1/agents/session', { token: minted.sessionDeferred, body: { session: 'run-2' } });
    await t.api('POST', '/v1/nodes', {
      token: minted.sessionBound,
      body: { nodes: [md({ id: 'task-needle-in-git', type: 'task', summary: 'needle-in-git summary' })] },
    });
    await t.api('POST', `/v1/agents/${agent}/capabilities`, { token: minted.standing, body: { skills: ['rust'] } });
    await t.api('POST', `/v1/agents/${agent}/heartbeat`, { token: minted.sessionDeferred });
    await t.api('GET', '/v1/me/tokens', { token: minted.ownPat });
    await t.api('GET', '/v1/admin/tokens');
    await t.api('GET', `/v1/me?token=${minted.ownPat}`, { token: minted.ownPat });
    await t.api('GET', `/v1/no-such-route/${minted.standing}`, { token: minted.standing });
    const revoke = (await t.api('GET', '/v1/me/tokens', { token: member.token })).body.tokens[0].hash_prefix;
    await t.api('DELETE', `/v1/me/tokens/${revoke}`, { token: member.token });
    // close the server so every last_used, snapshot and state file is flushed to disk
    await t.server.close();
  });
  after(() => rmSync(t.dataDir, { recursive: true, force: true }));

  // the embedded store's files (cluster mode: test/kernel/stores.test.ts checks the rows)
  (onPostgres ? it.skip : it)(
    'lists every file under the data directory and finds no plaintext token (nor its secret part) in any of them',
    () => {
      const files = filesUnder(t.dataDir);
      expect(files.length).to.be.greaterThan(10);
      const forms = files.map((f) => ({ file: relative(t.dataDir, f), contents: contentsOf(f) }));
      const objects = gitObjects(t.dataDir);

      // the scan is not blind: it sees the token hashes, a committed node inside zlib'd git objects,
      // and the bootstrap admin token in the one file docs/design.md says holds it
      const tokensFile = forms.find((f) => f.file === join('tenants', t.org, 'auth', 'tokens.json'))!;
      for (const token of Object.values(minted)) expect(tokensFile.contents[0]!.toString('utf8')).to.contain(hashToken(token));
      expect(objects.includes(Buffer.from('needle-in-git summary'))).to.equal(true);
      expect(
        forms.some((f) => f.contents.some((c) => c.includes(Buffer.from('needle-in-git summary'))) && f.file.includes('objects')),
      ).to.equal(true);
      expect(readFileSync(join(t.dataDir, 'admin-token'), 'utf8').trim()).to.equal(t.adminToken);

      for (const [kind, token] of Object.entries(minted)) {
        const secret = token.slice('svc_pat_'.length);
        for (const needle of [token, secret]) {
          const hits = forms.filter((f) => f.contents.some((c) => c.includes(Buffer.from(needle)))).map((f) => f.file);
          expect(hits, `${kind} token found in ${hits.join(', ')}`).to.deep.equal([]);
          expect(objects.includes(Buffer.from(needle)), `${kind} token inside a git object`).to.equal(false);
        }
      }
    },
  );

  // cluster mode: the same scan over every row of the server's PostgreSQL schema
  (onPostgres ? it : it.skip)(
    'finds no plaintext token in any row of the operational store (cluster mode), but finds their hashes',
    async () => {
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: t.server.services.config.databaseUrl! });
      await client.connect();
      try {
        const rows = await client.query<{ text: string }>(
          `SELECT record::text AS text FROM wg_tokens UNION ALL SELECT value::text FROM wg_state UNION ALL SELECT config::text FROM wg_tenants UNION ALL SELECT row_to_json(o)::text FROM wg_owners o`,
        );
        const all = rows.rows.map((r) => r.text).join('\n');
        for (const token of Object.values(minted)) expect(all).to.contain(hashToken(token));
        for (const [kind, token] of Object.entries(minted)) {
          expect(all.includes(token), `${kind} token in a row`).to.equal(false);
          expect(all.includes(token.slice('svc_pat_'.length)), `${kind} secret in a row`).to.equal(false);
        }
        expect(all.includes(t.adminToken)).to.equal(false);
      } finally {
        await client.end();
      }
    },
  );

  it('the server logs contain none of the tokens', () => {
    expect(t.logs.length).to.be.greaterThan(0);
    const all = t.logs.join('\n');
    expect(all).to.contain('listening on');
    for (const [kind, token] of Object.entries(minted)) {
      expect(all.includes(token), `${kind} token logged`).to.equal(false);
      expect(all.includes(token.slice('svc_pat_'.length)), `${kind} secret logged`).to.equal(false);
    }
    expect(all.includes(t.adminToken)).to.equal(false);
  });
});
