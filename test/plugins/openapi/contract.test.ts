/**
 * Property-based contract test (issue 13): requests generated from the server's own OpenAPI
 * document, valid and invalid, for every operation, through the real HTTP server. Every answer
 * must be a documented status of that operation, never a 5xx, and its body must match the
 * documented schema for that status; a body that breaks the request schema is a 422.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'chai';
import fc from 'fast-check';
import { putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { valueOf, wrongValueOf, type Schema } from '../../helpers/schema-arbitrary.js';
import { CONTRACT_PLUGINS } from './plugins.js';

const TOTAL_REQUESTS = Number(process.env.CONTRACT_REQUESTS ?? 5200);

interface OperationCase {
  method: string;
  path: string;
  op: Schema;
  pathParams: Schema[];
  queryParams: Schema[];
  body: Schema | null;
}

interface GeneratedRequest {
  kind: 'valid' | 'unknown-field' | 'wrong-type' | 'missing-required';
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: Record<string, unknown> | undefined;
}

function resolveRefs(value: unknown, doc: Schema): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, doc));
  if (!value || typeof value !== 'object') return value;
  const obj = value as Schema;
  if (typeof obj.$ref === 'string') {
    const target = obj.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, key: string) => node?.[key], doc);
    return resolveRefs(target, doc);
  }
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, resolveRefs(v, doc)]));
}

function querySerialize(value: unknown): string {
  if (Array.isArray(value)) return value.map((v) => String(v)).join(',');
  if (value && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

describe('openapi: property-based contract over every operation', function () {
  this.timeout(600_000);
  let t: TestServer;
  let doc: Schema;
  const cases: OperationCase[] = [];
  const validators = new Map<string, ValidateFunction>();
  const ajv = new Ajv({ allErrors: true, strict: false });

  before(async () => {
    t = await startTestServer({ plugins: CONTRACT_PLUGINS });
    await putNodes(t, [
      { id: 'task-contract-a', summary: 'A task the contract test works on' },
      { id: 'issue-contract-b', summary: 'An issue the contract test reads' },
      { id: 'dec-contract-c', summary: 'A decision under review' },
    ]);
    const res = await t.api('GET', '/v1/openapi.json');
    expect(res.status).to.equal(200);
    doc = res.body;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Schema>)) {
      for (const [method, raw] of Object.entries(item)) {
        const op = resolveRefs(raw, doc) as Schema;
        const parameters: Schema[] = op.parameters ?? [];
        const bodySchema = op.requestBody?.content?.['application/json']?.schema ?? null;
        cases.push({
          method: method.toUpperCase(),
          path,
          op,
          pathParams: parameters.filter((p) => p.in === 'path'),
          queryParams: parameters.filter((p) => p.in === 'query'),
          body: bodySchema,
        });
      }
    }
  });

  after(async () => {
    await t?.close();
  });

  function validatorFor(c: OperationCase, status: number, schema: Schema): ValidateFunction {
    const key = `${c.method} ${c.path} ${status}`;
    let v = validators.get(key);
    if (!v) {
      v = ajv.compile(schema);
      validators.set(key, v);
    }
    return v;
  }

  function requestArbitrary(c: OperationCase, ids: string[]): fc.Arbitrary<GeneratedRequest> {
    const opts = { ids };
    const paramsArb = fc.record(Object.fromEntries(c.pathParams.map((p) => [p.name, valueOf(p.schema, opts)])));
    const queryModel: Record<string, fc.Arbitrary<unknown>> = Object.fromEntries(
      c.queryParams.map((p) => [p.name, valueOf(p.schema, opts)]),
    );
    const requiredKeys: string[] = c.queryParams.filter((p) => p.required).map((p) => p.name);
    const queryArb = fc.record(queryModel, { requiredKeys }) as fc.Arbitrary<Record<string, unknown>>;
    const bodyArb: fc.Arbitrary<Record<string, unknown> | undefined> = c.body
      ? (valueOf(c.body, opts) as fc.Arbitrary<Record<string, unknown>>)
      : fc.constant(undefined);
    const valid: fc.Arbitrary<GeneratedRequest> = fc.record({
      kind: fc.constant('valid' as const),
      params: paramsArb as fc.Arbitrary<Record<string, unknown>>,
      query: queryArb,
      body: bodyArb,
    });
    if (!c.body) return valid;
    const props: Record<string, Schema> = c.body.properties ?? {};
    const required: string[] = c.body.required ?? [];
    const invalid: Array<fc.Arbitrary<GeneratedRequest>> = [
      valid.map((r) => ({ ...r, kind: 'unknown-field' as const, body: { ...(r.body ?? {}), zz_not_a_field: 1 } })),
    ];
    const typed = Object.entries(props).flatMap(([name, schema]) => {
      const wrong = wrongValueOf(schema);
      return wrong ? [wrong.map((value) => [name, value] as const)] : [];
    });
    if (typed.length > 0) {
      invalid.push(
        fc
          .tuple(valid, fc.oneof(...typed))
          .map(([r, [name, value]]) => ({ ...r, kind: 'wrong-type' as const, body: { ...(r.body ?? {}), [name]: value } })),
      );
    }
    if (required.length > 0) {
      invalid.push(
        fc.tuple(valid, fc.constantFrom(...required)).map(([r, name]) => {
          const body = { ...(r.body ?? {}) };
          delete body[name];
          return { ...r, kind: 'missing-required' as const, body };
        }),
      );
    }
    return fc.oneof({ weight: 3, arbitrary: valid }, ...invalid.map((arbitrary) => ({ weight: 1, arbitrary })));
  }

  async function send(c: OperationCase, r: GeneratedRequest) {
    let path = c.path;
    for (const [name, value] of Object.entries(r.params)) path = path.replace(`{${name}}`, encodeURIComponent(String(value)));
    const qs = new URLSearchParams();
    for (const [name, value] of Object.entries(r.query)) if (value !== undefined) qs.set(name, querySerialize(value));
    // a long poll (GET /v1/events `wait`, up to 60 s) is about shapes here, not waiting: at most 1 s
    if (typeof r.query.wait === 'number') qs.set('wait', String(Math.min(Math.max(r.query.wait, 0), 1)));
    const url = qs.size > 0 ? `${path}?${qs}` : path;
    const headers: Record<string, string> = { authorization: `Bearer ${t.adminToken}` };
    if (r.body !== undefined) headers['content-type'] = 'application/json';
    // a request that hangs is a failure of its own, named with the request
    const res = await fetch(t.url + url, {
      method: c.method,
      headers,
      body: r.body === undefined ? undefined : JSON.stringify(r.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
    }).catch((err: Error) => {
      throw new Error(`${c.method} ${url} ${JSON.stringify(r.body)?.slice(0, 300)}: ${err.message}`);
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.status, text, body, headers: res.headers };
  }

  it('covers every operation with valid and invalid requests: documented statuses only, no 5xx, answers match their schemas', async () => {
    const ids = ['task-contract-a', 'issue-contract-b', 'dec-contract-c', 'proj-root', t.adminPerson];
    const perOperation = Math.ceil(TOTAL_REQUESTS / cases.length);
    let sent = 0;
    const seen = new Map<string, Set<string>>();
    for (const c of cases) {
      if (process.env.CONTRACT_TRACE) console.log(`${c.method} ${c.path}`);
      const documented = c.op.responses as Record<string, Schema>;
      await fc.assert(
        fc.asyncProperty(requestArbitrary(c, ids), async (r) => {
          const res = await send(c, r);
          sent++;
          const where = `${c.method} ${c.path} (${r.kind}) -> ${res.status} ${res.text.slice(0, 300)}`;
          expect(res.status, where).to.be.below(500);
          const response = documented[String(res.status)];
          expect(response, `undocumented status: ${where}`).to.not.equal(undefined);
          const contentType = res.headers.get('content-type') ?? '';
          const media = response!.content as Record<string, Schema> | undefined;
          if (media && /json/.test(contentType) && media['application/json']) {
            const validate = validatorFor(c, res.status, media['application/json'].schema);
            expect(validate(res.body), `${where}\n${JSON.stringify(validate.errors)}`).to.equal(true);
          } else if (media) {
            const declared = Object.keys(media).map((m) => m.split(';')[0]);
            expect(declared, `undocumented content type ${contentType}: ${where}`).to.include(contentType.split(';')[0]!.trim());
          }
          if (r.kind !== 'valid') expect(res.status, `a body that breaks the schema is 422: ${where}`).to.equal(422);
          const key = `${c.method} ${c.path}`;
          if (!seen.has(key)) seen.set(key, new Set());
          seen.get(key)!.add(r.kind);
        }),
        { numRuns: perOperation, seed: Number(process.env.CONTRACT_SEED ?? 20261124), endOnFailure: true },
      );
    }
    expect(sent).to.be.at.least(Math.min(TOTAL_REQUESTS, 5000));
    expect([...seen.keys()]).to.have.length(cases.length);
    for (const [key, kinds] of seen) expect(kinds.has('valid'), `${key} got no valid request`).to.equal(true);
  });
});
