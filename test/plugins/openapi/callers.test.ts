/**
 * The served OpenAPI documents state each operation's callers: an `x-callers` extension equal to
 * the plugin's access declaration, and a sentence in the description.
 */
import { expect } from 'chai';
import { openApiCallers } from '../../../kernel/access.js';
import { isOperationDef } from '../../../kernel/operation.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { CONTRACT_PLUGINS } from './plugins.js';

describe('openapi: every operation states who may call it', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: CONTRACT_PLUGINS });
  });
  after(async () => t?.close());

  for (const path of ['/openapi.json', '/v1/openapi.json']) {
    it(`${path}: x-callers equals the declaration, and the description says it`, async () => {
      const res = await t.api('GET', path);
      expect(res.status).to.equal(200);
      let checked = 0;
      for (const plugin of CONTRACT_PLUGINS) {
        for (const route of plugin.routes ?? []) {
          if (!isOperationDef(route.operation)) continue;
          const op = res.body.paths[route.path.replace(/:([A-Za-z_$][\w$]*)/g, '{$1}')]?.[route.method.toLowerCase()];
          expect(op, `${route.method} ${route.path}`).to.not.equal(undefined);
          const access = plugin.access![route.operation.name]!;
          expect(op['x-callers'], route.operation.name).to.deep.equal(openApiCallers(access));
          expect(op.description, route.operation.name).to.contain(`Callers: `).and.contain(access.scope);
          checked++;
        }
      }
      expect(checked).to.be.above(60);
      // the admin gate reads the same in both forms
      const people = res.body.paths['/v1/admin/people'].get;
      expect(people['x-callers']).to.include({ admin: true });
      expect(people['x-callers'].callers).to.deep.equal(['pat', 'oauth', 'connector-jwt']);
      expect(people.description).to.contain('(the person must be an admin)');
    });
  }
});
