/**
 * The OpenAPI document (issue 13): valid OpenAPI 3.1 by a real validator, clean under a real
 * linter, generated from the same declarations the kernel registered and the MCP tools use.
 */
import { mayEverCall } from '../../../kernel/access.js';
import { compileErrors, validate } from '@readme/openapi-parser';
import { listingSchema } from '../../../kernel/mcp.js';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { expect } from 'chai';
import { isOperationDef } from '../../../kernel/operation.js';
import { resolveTool } from '../../../kernel/plugin.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { CONTRACT_PLUGINS } from './plugins.js';

type Doc = { openapi: string; paths: Record<string, Record<string, any>>; components: any; security: any[] };

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z_$][\w$]*)/g, '{$1}');

describe('openapi: the API description', function () {
  this.timeout(60_000);
  let t: TestServer;
  let doc: Doc;

  before(async () => {
    t = await startTestServer({ plugins: CONTRACT_PLUGINS });
    const res = await t.api('GET', '/v1/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/application\/json/);
    doc = res.body;
  });

  after(async () => {
    await t?.close();
  });

  it('is a valid OpenAPI 3.1 document (@readme/openapi-parser)', async () => {
    expect(doc.openapi).to.equal('3.1.0');
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).to.equal(true);
  });

  it('lints clean under the Redocly recommended rules (warnings included)', async () => {
    // info-license: the project does not publish under a license yet (docs/decisions.md)
    const config = await createConfig({ extends: ['recommended'], rules: { 'info-license': 'off' } } as never);
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`)).to.deep.equal([]);
  });

  it('covers exactly the routes the kernel registered, each with its declared operation', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    const registered = t.server.services.registeredRoutes.map((r) => `${r.method} ${toOpenApiPath(r.path)}`);
    expect(documented.sort()).to.deep.equal([...new Set(registered)].sort());
    for (const plugin of CONTRACT_PLUGINS) {
      for (const route of plugin.routes ?? []) {
        const op = doc.paths[toOpenApiPath(route.path)]![route.method.toLowerCase()];
        expect(isOperationDef(route.operation), `${route.method} ${route.path}`).to.equal(true);
        if (isOperationDef(route.operation)) expect(op.operationId).to.equal(route.operation.name);
      }
    }
    const ids = documented.map((k) => k);
    const operationIds = Object.values(doc.paths).flatMap((item) => Object.values(item).map((o) => o.operationId));
    expect(new Set(operationIds).size, 'operationIds are unique').to.equal(ids.length);
  });

  it('documents parameters, bodies, answers, the error envelope and the security schemes', () => {
    const read = doc.paths['/v1/nodes/{id}']!.get;
    expect(read.parameters).to.deep.include({
      name: 'id',
      in: 'path',
      required: true,
      schema: read.parameters[0].schema,
      description: read.parameters[0].schema.description,
    });
    // markdown is optional: sent unless include_markdown=false (the tool's default is the lean form)
    expect(read.responses['200'].content['application/json'].schema.required).to.include.members(['id', 'frontmatter', 'body', 'revision']);
    expect(read.responses['200'].content['application/json'].schema.properties).to.have.property('markdown');
    expect(read.parameters.map((p: { name: string }) => p.name)).to.include('include_markdown');
    expect(read.responses['404'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/ErrorEnvelope' });
    const put = doc.paths['/v1/nodes']!.post;
    expect(put.requestBody.content['application/json'].schema.required).to.deep.equal(['nodes']);
    expect(put.requestBody.content['application/json'].example.nodes[0]).to.match(/^---\nid: task-/);
    expect(Object.keys(put.responses)).to.include.members(['200', '207', '401', '413', '422']);
    const status = doc.paths['/v1/nodes/{id}/status']!.post;
    expect(Object.keys(status.responses)).to.include('409');
    const listing = doc.paths['/v1/status']!.get;
    expect(listing.parameters).to.deep.include({
      name: 'titles',
      in: 'query',
      required: false,
      schema: { type: 'boolean', description: 'also return the title index of every node' },
      description: 'also return the title index of every node',
    });
    expect(doc.components.schemas.ErrorEnvelope.required).to.deep.equal(['error']);
    expect(doc.components.securitySchemes.bearer).to.include({ type: 'http', scheme: 'bearer' });
    expect(doc.security).to.deep.include({ bearer: [] });
  });

  it('MCP tools take their input schemas from the same declarations as the routes', async () => {
    const client = await t.mcp();
    const listed = new Map((await client.listTools()).tools.map((tool) => [tool.name, tool]));
    let compared = 0;
    for (const plugin of CONTRACT_PLUGINS) {
      for (const def of plugin.tools ?? []) {
        const tool = resolveTool(def);
        const access = plugin.access?.[tool.name];
        // tools/list shows this admin's PAT the tools it may call (kernel/mcp.ts listedFor)
        if (access && !mayEverCall(access, 'pat', true, true)) expect(listed.has(tool.name), tool.name).to.equal(false);
        // ... in the listing form of the same declaration (kernel/mcp.ts listingSchema)
        else expect(listed.get(tool.name)?.inputSchema, tool.name).to.deep.equal(listingSchema(tool.inputSchema));
        if (!isOperationDef(def.operation)) continue;
        const route = (plugin.routes ?? []).find((r) => r.operation === def.operation);
        if (!route) continue;
        const op = doc.paths[toOpenApiPath(route.path)]![route.method.toLowerCase()];
        // one name per operation: the tool's name is its operationId
        expect(op.operationId).to.equal(tool.name);
        const documentedFields = [
          ...(op.parameters ?? []).map((p: { name: string }) => p.name),
          ...Object.keys(op.requestBody?.content['application/json'].schema.properties ?? {}),
        ].sort();
        expect(documentedFields, tool.name).to.deep.equal(Object.keys((tool.inputSchema.properties as object) ?? {}).sort());
        compared++;
      }
    }
    expect(compared).to.be.greaterThan(5);
  });

  it("a tenant's document lists only the plugins enabled for it; /openapi.json without a token lists the server's", async () => {
    const all = await fetch(`${t.url}/openapi.json`);
    expect(all.status).to.equal(200);
    const server = (await all.json()) as Doc;
    expect(Object.keys(server.paths).sort()).to.deep.equal(Object.keys(doc.paths).sort());
    const small = await t.server.services.tenants.create({
      org: 'small',
      adminName: 'Small',
      adminEmail: 's@small.test',
      plugins: ['core', 'leases'],
    });
    await t.server.services.tenants.scan();
    const own = await t.api('GET', '/v1/openapi.json', { token: small.token });
    expect(own.status).to.equal(200);
    const tags = new Set(
      Object.values(own.body.paths as Doc['paths']).flatMap((item) => Object.values(item).flatMap((o) => o.tags as string[])),
    );
    // openapi and events are on for every tenant (alwaysOn)
    expect([...tags].sort()).to.deep.equal(['core', 'events', 'leases', 'openapi']);
    expect(own.body.paths['/v1/nodes/{id}/claim']).to.have.property('post');
    expect(own.body.paths).to.not.have.property('/v1/queue');
    expect(Object.keys(own.body.paths).length).to.be.lessThan(Object.keys(doc.paths).length);
    const unauthenticated = await t.api('GET', '/v1/openapi.json', { token: null });
    expect(unauthenticated.status).to.equal(401);
    expect(unauthenticated.body.error.code).to.equal('unauthorized');
  });

  it('serves a rendered reference at /docs under a CSP without inline scripts', async () => {
    const page = await fetch(`${t.url}/docs`);
    expect(page.status).to.equal(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).to.include("script-src 'self'");
    expect(csp).to.not.match(/script-src[^;]*unsafe-inline/);
    const html = await page.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).to.equal(2);
    for (const [, attrs, inline] of scripts) {
      expect(attrs).to.match(/src="\/docs\/[a-z]+\.js"/);
      expect(inline!.trim()).to.equal('');
    }
    const bundle = await fetch(`${t.url}/docs/scalar.js`);
    expect(bundle.status).to.equal(200);
    expect(bundle.headers.get('content-type')).to.match(/javascript/);
    expect((await bundle.text()).length).to.be.greaterThan(100_000);
    const start = await (await fetch(`${t.url}/docs/start.js`)).text();
    expect(start).to.include('createApiReference');
  });
});
