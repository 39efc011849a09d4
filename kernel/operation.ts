/**
 * One declaration per operation. An operation names itself, describes its input and its
 * answer as JSON Schema, lists the error statuses it may answer, and carries the function
 * that does the work. Everything else is derived from that one object:
 *
 * - the REST adapter assembles path, query and body into the input and validates it with
 *   ajv before `run` sees it (a failure is 422 `validation_failed` with ajv's error list
 *   verbatim under `details.errors`);
 * - the MCP tool's `inputSchema` is `input`, validated the same way;
 * - the OpenAPI document (plugins/openapi) takes parameters, request bodies and responses
 *   from it, and the contract test checks every answer against `output`.
 *
 * `run` keeps the business rules (the node exists, the caller holds the lease, a value is
 * allowed by the live schema); shape checks belong in `input`.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { errors, isSvcError } from './errors.js';
import { withHints } from './error-hints.js';
import { RawResponse, StatusPayload, type OpContext, type RouteDef } from './plugin.js';

/** A JSON Schema (draft 2020-12 subset that ajv and OpenAPI 3.1 both read). */
export type JsonSchema = Record<string, unknown>;

export interface OperationSpec<I = any, O = any> {
  /** operationId and default tool name: snake_case, unique across plugins */
  name: string;
  /** one line for the API reference */
  summary: string;
  /** what a caller (person or agent) needs to know; the tool description unless the tool overrides it */
  description?: string;
  /** an object schema over every input field (path, query and body alike) */
  input: JsonSchema;
  /** the schema of a successful answer (JSON payloads); omitted for streams and HTML */
  output?: JsonSchema;
  /** the media type of a non-JSON answer (export streams, rendered pages) */
  produces?: string[];
  /** error statuses `run` may answer beyond the adapters' own (401, 404, 413, 422) */
  errors?: number[];
  /** other success statuses with the same output schema (207 for a partial batch) */
  alsoSucceedsWith?: number[];
  /** redirect statuses the operation may answer (a `Location` header, no body) */
  redirects?: number[];
  /** a valid input, for the API reference */
  example?: Record<string, unknown>;
  run: (ctx: OpContext, input: I) => Promise<O>;
}

export interface OperationDef<I = any, O = any> extends OperationSpec<I, O> {
  readonly kind: 'operation';
}

/** Declares an operation; the schema is compiled on first use (start-up stays cheap). */
export function defineOperation<I = any, O = any>(spec: OperationSpec<I, O>): OperationDef<I, O> {
  if (!/^[a-z][a-z0-9_]*$/.test(spec.name)) throw new Error(`operation '${spec.name}': name must be snake_case`);
  if (spec.input.type !== 'object') throw new Error(`operation '${spec.name}': input must be an object schema`);
  return { ...spec, kind: 'operation' };
}

export function isOperationDef(value: unknown): value is OperationDef {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'operation';
}

const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

/** The compiled validator of a schema object (cached per object). */
export function validatorOf(schema: JsonSchema): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

/**
 * Answer checking for test runs: every answer of a declared operation is validated against its
 * `output` schema, and a mismatch fails the request loudly (a 500 with the reason in the log).
 * The test harness turns it on, so the whole suite holds each declaration to what the code sends.
 */
export const answerChecks = { enabled: false };

/** Validates `input` against the operation's schema, then runs it. */
export async function invoke<I, O>(op: OperationDef<I, O>, ctx: OpContext, input: unknown): Promise<O> {
  const validate = validatorOf(op.input);
  if (!validate(input)) throw validationError(op.name, validate.errors ?? []);
  let result: O;
  try {
    result = await op.run(ctx, input as I);
  } catch (err) {
    // nearest ids and people's names (kernel/error-hints.ts): both adapters come through here
    throw isSvcError(err) ? withHints(err, ctx.tenant) : err;
  }
  if (answerChecks.enabled && op.output) checkAnswer(op, result);
  return result;
}

function checkAnswer(op: OperationDef, result: unknown): void {
  let payload: unknown = result;
  if (payload instanceof StatusPayload) payload = payload.payload;
  if (payload instanceof RawResponse) {
    if (!/json/.test(payload.headers['content-type'] ?? '') || typeof payload.body !== 'string') return;
    payload = JSON.parse(payload.body);
  }
  const validate = validatorOf(op.output!);
  if (!validate(payload)) {
    throw new Error(`answer of operation ${op.name} does not match its declared output: ${JSON.stringify(validate.errors)} in ${JSON.stringify(payload).slice(0, 400)}`);
  }
}

/**
 * The 422 for input that failed its schema. The message names the first failure, not the
 * operation, so a route and its tool twin answer the same bytes even where they are declared
 * as two operations (a combined tool over a singular and a batch route).
 */
export function validationError(_name: string, list: ErrorObject[] | Array<Record<string, unknown>>) {
  const first = list[0] as Partial<ErrorObject> | undefined;
  return errors.validation(`invalid input${first ? describeAjvError(first) : ''}`, [...list]);
}

/**
 * One validator failure as a clause a reader can act on: where, what, and the allowed values
 * when the schema has a set of them (ajv's `enum` message alone does not list them).
 */
export function describeAjvError(e: Partial<ErrorObject>): string {
  const where = e.instancePath ? ` at ${e.instancePath}` : '';
  let what = e.message ?? 'invalid';
  const params = (e.params ?? {}) as Record<string, unknown>;
  if (e.keyword === 'enum' && Array.isArray(params.allowedValues)) what += `: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  else if (e.keyword === 'const' && 'allowedValue' in params) what += `: ${JSON.stringify(params.allowedValue)}`;
  else if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') what += ` ('${params.additionalProperty}')`;
  return `${where}: ${what}`;
}

// ------------------------------------------------------------------ where REST input comes from

/** The path parameter names of a route pattern (`/v1/nodes/:id` -> `id`). */
export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_$][\w$]*)/g)].map((m) => m[1]!);
}

/** The input fields a route reads from the query string: every non-path field on GET (less those gathered from prefixed keys), the declared ones elsewhere. */
export function queryFieldsOf(op: OperationDef, route: RouteDef): string[] {
  // a route's query fields are a function of its declaration: computed once (the REST adapter asks per request)
  let byOp = queryFieldsCache.get(route);
  if (!byOp) queryFieldsCache.set(route, (byOp = new WeakMap()));
  let fields = byOp.get(op);
  if (!fields) byOp.set(op, (fields = computeQueryFields(op, route)));
  return fields;
}

const queryFieldsCache = new WeakMap<RouteDef, WeakMap<OperationDef, string[]>>();

function computeQueryFields(op: OperationDef, route: RouteDef): string[] {
  const params = new Set([...pathParamsOf(route.path), ...Object.values(route.queryPrefixes ?? {})]);
  const props = Object.keys((op.input.properties as Record<string, unknown> | undefined) ?? {});
  if (route.method === 'GET') return props.filter((p) => !params.has(p));
  return (route.query ?? []).filter((p) => props.includes(p));
}

// ------------------------------------------------------------------ schema builders

/** A closed object schema: the listed properties, the required ones, nothing else. */
export function object(properties: Record<string, JsonSchema>, required: string[] = [], extra: JsonSchema = {}): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false, ...extra };
}

/** An open object schema for answers: these keys are promised, more may be added (docs/spec.md: additive keys). */
export function answer(properties: Record<string, JsonSchema>, required: string[] = Object.keys(properties)): JsonSchema {
  return { type: 'object', properties, required };
}

export const s = {
  string: (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...(description ? { description } : {}), ...extra }),
  integer: (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...(description ? { description } : {}), ...extra }),
  number: (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'number', ...(description ? { description } : {}), ...extra }),
  boolean: (description?: string): JsonSchema => ({ type: 'boolean', ...(description ? { description } : {}) }),
  array: (items: JsonSchema, description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'array', items, ...(description ? { description } : {}), ...extra }),
  /** the schema or null: a `type` list when the schema has one plain type, else anyOf */
  nullable: (schema: JsonSchema): JsonSchema =>
    typeof schema.type === 'string' && !schema.enum && !schema.const ? { ...schema, type: [schema.type, 'null'] } : { anyOf: [schema, { type: 'null' }] },
  /** a string or null (optional text answers, ids that may be unset) */
  stringOrNull: (description?: string): JsonSchema => ({ type: ['string', 'null'], ...(description ? { description } : {}) }),
  enum: (values: unknown[], description?: string): JsonSchema => ({ enum: values, ...(description ? { description } : {}) }),
  /** any JSON object (open) */
  object: (description?: string): JsonSchema => ({ type: 'object', ...(description ? { description } : {}) }),
  any: (description?: string): JsonSchema => (description ? { description } : {}),
};

/** A path id or node id: kebab-case, at most 200 characters (docs/spec.md conventions). */
export const NodeId: JsonSchema = { type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$', maxLength: 200, description: 'node id, e.g. task-fix-login' };
/** The write success shape: `{status, id, revision, warnings}`. */
export const WriteResult: JsonSchema = answer({
  status: { enum: ['created', 'updated', 'skipped'] },
  id: { type: 'string' },
  revision: { type: ['string', 'null'] },
  warnings: { type: 'array', items: { type: 'string' } },
});
