/**
 * The access declarations (kernel/access.ts, plugins/<name>/access.ts): the plugin host refuses to
 * boot a declared operation without one (naming the plugin and the operation), and
 * docs/authorization.md is exactly what `npm run docs:authz` generates from them.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, createLogger } from '../../kernel/config.js';
import { answer, defineOperation, object } from '../../kernel/operation.js';
import { declaredOperations, definePlugin, type PluginDef } from '../../kernel/plugin.js';
import { PluginHost } from '../../kernel/plugin-host.js';
import { startServer } from '../../kernel/server.js';
import { corePlugin } from '../../plugins/core/index.js';
import { AUTHORIZATION_DOC, renderAuthorizationDoc } from '../../scripts/authz-doc.js';
import { allPlugins } from '../../scripts/plugins.js';

const ping = defineOperation({ name: 'probe_ping', summary: 'ping', input: object({}), output: answer({}), run: async () => ({}) });

describe('authorization: access declarations', () => {
  it('every declared operation of every plugin has one, and each names only known credential kinds', () => {
    expect(() => new PluginHost(allPlugins)).to.not.throw();
    const names = allPlugins.flatMap((p) => declaredOperations(p).map((op) => `${p.name}.${op.name}`));
    expect(names.length).to.be.above(80);
    for (const p of allPlugins)
      for (const op of declaredOperations(p))
        expect(p.access?.[op.name], `${p.name}.${op.name}`).to.have.property('scope').that.is.a('string').and.not.empty;
  });

  it('the host refuses to boot a plugin with an operation that has no access declaration, naming the plugin and the operation', async () => {
    const bare = definePlugin({ name: 'probe', dependsOn: ['core'], routes: [{ method: 'GET', path: '/v1/probe', operation: ping }] });
    expect(() => new PluginHost([corePlugin, bare])).to.throw(/plugin 'probe': operation 'probe_ping' has no access declaration/);
    // a tool-only operation too
    const toolOnly = definePlugin({ name: 'probe', dependsOn: ['core'], tools: [{ operation: ping }] });
    expect(() => new PluginHost([corePlugin, toolOnly])).to.throw(/plugin 'probe': operation 'probe_ping' has no access declaration/);
    // and through the real start: nothing listens, the message says what to add
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-authz-'));
    try {
      let message = '';
      await startServer({
        config: { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false },
        plugins: [corePlugin, bare],
        log: createLogger(() => undefined),
      }).then(
        (s) => s.close(),
        (err: Error) => (message = err.message),
      );
      expect(message).to.match(/plugin 'probe': operation 'probe_ping' has no access declaration \(add it to plugins\/probe\/access\.ts/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a declaration naming no operation, an unknown credential kind or no scope is refused too', () => {
    const withAccess = (access: PluginDef['access']) =>
      definePlugin({ name: 'probe', dependsOn: ['core'], routes: [{ method: 'GET', path: '/v1/probe', operation: ping }], access });
    expect(() => new PluginHost([corePlugin, withAccess({ probe_ping: { callers: ['pat'], scope: 'x' } })])).to.not.throw();
    expect(
      () =>
        new PluginHost([
          corePlugin,
          withAccess({ probe_ping: { callers: ['pat'], scope: 'x' }, probe_gone: { callers: ['pat'], scope: 'x' } }),
        ]),
    ).to.throw(/plugin 'probe': access declaration 'probe_gone' names no operation/);
    expect(() => new PluginHost([corePlugin, withAccess({ probe_ping: { callers: ['root' as never], scope: 'x' } })])).to.throw(
      /operation 'probe_ping' declares unknown credential kind\(s\) root/,
    );
    expect(() => new PluginHost([corePlugin, withAccess({ probe_ping: { callers: ['pat'], scope: '' } })])).to.throw(
      /operation 'probe_ping' declares no scope/,
    );
  });

  it('docs/authorization.md is the generated table (run `npm run docs:authz` after changing a declaration)', () => {
    const committed = readFileSync(AUTHORIZATION_DOC, 'utf8');
    const generated = renderAuthorizationDoc();
    expect(committed === generated, 'docs/authorization.md is stale: run `npm run docs:authz`').to.equal(true);
    for (const p of allPlugins) for (const op of declaredOperations(p)) expect(committed).to.contain(`| \`${op.name}\` |`);
  });
});
