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
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { errors, isSvcError } from './errors.js';
import { withHints } from './error-hints.js';
import { RawResponse, StatusPayload, type OpContext, type RouteDef } from './plugin.js';

export type { Static, TSchema };

/** A JSON Schema (draft 2020-12 subset that ajv and OpenAPI 3.1 both read), untyped: for reading schemas. */
export type JsonSchema = Record<string, unknown>;

/** A JSON Schema that carries its TypeScript type: `Static<typeof X>` is the value it admits. */
export type Schema<T> = TUnsafe<T>;

/** What `run` may resolve to: the answer itself, the answer under another status (207), or a raw response. */
export type Answer<O> = O | StatusPayload<O> | RawResponse;

interface OperationMeta {
  /** operationId and tool name: snake_case, unique across plugins */
  name: string;
  /** one line for the API reference */
  summary: string;
  /** what a caller (person or agent) needs to know; the tool description unless the tool overrides it */
  description?: string;
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
}

/**
 * An operation as declared: `input` (an object schema over every input field, path, query and
 * body alike) and `output` (the schema of a successful JSON answer; omitted for streams and
 * HTML) are typed schemas, and `run` is typed from them: its input is `Static<IS>`, its answer
 * `Static<OS>`. The schema is the only declaration of the shape.
 */
export interface OperationSpec<IS extends TSchema, OS extends TSchema> extends OperationMeta {
  input: IS;
  output?: OS;
  run: (ctx: OpContext, input: Static<IS>) => Promise<Answer<Static<OS>>>;
}

/**
 * A declared operation, typed by its input `I` and answer `O`. `run` is a method so that any
 * operation is usable where `OperationDef` (unknown input and answer) is expected: registries,
 * adapters and the OpenAPI document hold them all in one list and always validate the input
 * against `input` before calling `run` (see `invoke`).
 */
export interface OperationDef<I = unknown, O = unknown> extends OperationMeta {
  readonly kind: 'operation';
  input: JsonSchema;
  output?: JsonSchema;
  run(ctx: OpContext, input: I): Promise<Answer<O>>;
}

/** Declares an operation; the schema is compiled on first use (start-up stays cheap). */
export function defineOperation<IS extends TSchema, OS extends TSchema = Schema<unknown>>(
  spec: OperationSpec<IS, OS>,
): OperationDef<Static<IS>, Static<OS>> {
  if (!/^[a-z][a-z0-9_]*$/.test(spec.name)) throw new Error(`operation '${spec.name}': name must be snake_case`);
  if (spec.input.type !== 'object') throw new Error(`operation '${spec.name}': input must be an object schema`);
  return { ...spec, kind: 'operation' };
}

export function isOperationDef(value: unknown): value is OperationDef {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'operation';
}

// validateSchema off: these schemas are the code's own (TypeBox), checked against the JSON Schema
// meta-schema by test/kernel/operation-schemas.test.ts; checking them here compiled the
// meta-schema on a server's first request (about 50 ms of the first read's CPU)
const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
// the one format the declarations use: an RFC 3339 time with its offset, as the server writes
// them (Ajv alone knows no formats, and warned on stderr for each schema that named it)
ajv.addFormat('date-time', {
  type: 'string',
  validate: (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)),
});
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

/**
 * The operations that only read (every REST route a GET; a tool-only operation marked
 * `readOnlyHint`), marked by the plugin host (kernel/plugin-host.ts): `invoke` holds them at the
 * tenant's read barrier, so no answer reveals a commit before it is durable. A write needs no
 * barrier: it answers only once its own commits, and so every earlier one, are durable.
 */
export const readOperations = new WeakSet<object>();

/** Validates `input` against the operation's schema, then runs it. */
export async function invoke<Op extends OperationDef<never, unknown>>(
  op: Op,
  ctx: OpContext,
  input: unknown,
): Promise<Awaited<ReturnType<Op['run']>>> {
  const validate = validatorOf(op.input);
  if (!validate(input)) throw validationError(op.name, validate.errors ?? []);
  if (readOperations.has(op)) {
    const barrier = ctx.tenant.readBarrier();
    if (barrier) await barrier;
  }
  let result: Awaited<ReturnType<Op['run']>>;
  try {
    // the input passed its schema: it is the operation's declared input type
    result = (await op.run(ctx, input as never)) as Awaited<ReturnType<Op['run']>>;
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
    throw new Error(
      `answer of operation ${op.name} does not match its declared output: ${JSON.stringify(validate.errors)} in ${JSON.stringify(payload).slice(0, 400)}`,
    );
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
  if (e.keyword === 'enum' && Array.isArray(params.allowedValues))
    what += `: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  else if (e.keyword === 'const' && 'allowedValue' in params) what += `: ${JSON.stringify(params.allowedValue)}`;
  else if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
    what += ` ('${params.additionalProperty}')`;
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
//
// Each builder returns the plain JSON Schema object (the bytes the tool list, the OpenAPI
// document and ajv see) typed with TypeBox's `TUnsafe<T>`, so `Static<typeof schema>` is the
// TypeScript type of the values it admits. TypeBox's own `Type.*` builders mix freely with
// these (both are `TSchema`); these keep the established JSON shapes (a `type` list for
// nullable scalars, closed input objects, open answers).

type Props = Record<string, TSchema>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** The type of an object with properties `P`, of which `R` are required (mutable: code builds answers field by field). */
export type ObjectOf<P extends Props, R extends keyof P> = Simplify<
  { -readonly [K in R]: Static<P[K]> } & { -readonly [K in Exclude<keyof P, R>]?: Static<P[K]> }
>;
type Primitive = string | number | boolean | null;

const typed = <T>(schema: JsonSchema): Schema<T> => Type.Unsafe<T>(schema);
const described = (description?: string): JsonSchema => (description ? { description } : {});

/** A closed object schema: the listed properties, the required ones, nothing else. */
export function object<const P extends Props, const R extends keyof P & string = never>(
  properties: P,
  required: readonly R[] = [],
  extra: JsonSchema = {},
): Schema<ObjectOf<P, R>> {
  return typed({ type: 'object', properties, required: [...required], additionalProperties: false, ...extra });
}

/** An open object schema for answers: these keys are promised (all by default), more may be added (docs/spec.md: additive keys). */
export function answer<const P extends Props, const R extends keyof P & string = keyof P & string>(
  properties: P,
  required?: readonly R[],
): Schema<ObjectOf<P, R>> {
  return typed({ type: 'object', properties, required: required ? [...required] : Object.keys(properties) });
}

/** `base` (an object schema) with more properties, of which `required` are required. */
export function extend<T, const P extends Props, const R extends keyof P & string = never>(
  base: Schema<T>,
  properties: P,
  required: readonly R[] = [],
): Schema<Simplify<T & ObjectOf<P, R>>> {
  const b = base as unknown as JsonSchema;
  return typed({
    ...b,
    properties: { ...(b.properties as object), ...properties },
    ...(Array.isArray(b.required) || required.length ? { required: [...((b.required as string[] | undefined) ?? []), ...required] } : {}),
  });
}

export const s = {
  string: (description?: string, extra: JsonSchema = {}): Schema<string> => typed({ type: 'string', ...described(description), ...extra }),
  integer: (description?: string, extra: JsonSchema = {}): Schema<number> =>
    typed({ type: 'integer', ...described(description), ...extra }),
  number: (description?: string, extra: JsonSchema = {}): Schema<number> => typed({ type: 'number', ...described(description), ...extra }),
  boolean: (description?: string): Schema<boolean> => typed({ type: 'boolean', ...described(description) }),
  array: <T extends TSchema>(items: T, description?: string, extra: JsonSchema = {}): Schema<Static<T>[]> =>
    typed({ type: 'array', items, ...described(description), ...extra }),
  /** the schema or null: a `type` list when the schema has one plain type, else anyOf */
  nullable: <T extends TSchema>(schema: T): Schema<Static<T> | null> =>
    typed(
      typeof schema.type === 'string' && !schema.enum && !('const' in schema)
        ? { ...schema, type: [schema.type, 'null'] }
        : { anyOf: [schema, { type: 'null' }] },
    ),
  /** a string or null (optional text answers, ids that may be unset) */
  stringOrNull: (description?: string): Schema<string | null> => typed({ type: ['string', 'null'], ...described(description) }),
  /** an integer or null */
  integerOrNull: (description?: string): Schema<number | null> => typed({ type: ['integer', 'null'], ...described(description) }),
  enum: <const V extends readonly Primitive[]>(values: V, description?: string): Schema<V[number]> =>
    typed({ enum: [...values], ...described(description) }),
  /** exactly this value */
  const: <const V extends Primitive>(value: V, description?: string): Schema<V> => typed({ const: value, ...described(description) }),
  /** any JSON object (open) */
  object: (description?: string): Schema<Record<string, unknown>> => typed({ type: 'object', ...described(description) }),
  /** an object whose every value has one schema (a map keyed by id, name, ...) */
  record: <T extends TSchema>(values: T, description?: string): Schema<Record<string, Static<T>>> =>
    typed({ type: 'object', additionalProperties: values, ...described(description) }),
  /** one of these schemas (anyOf) */
  union: <const T extends readonly TSchema[]>(schemas: T, description?: string): Schema<Static<T[number]>> =>
    typed({ anyOf: [...schemas], ...described(description) }),
  any: (description?: string): Schema<unknown> => typed(described(description)),
  /**
   * Escape hatch for keywords the builders above do not cover: the JSON Schema as written,
   * typed `T`. Keep `T` next to the schema and as narrow as the schema.
   */
  raw: <T>(schema: JsonSchema): Schema<T> => typed(schema),
};

/** A path id or node id: kebab-case, at most 200 characters (docs/spec.md conventions). */
export const NodeId = s.string('node id, e.g. task-fix-login', { pattern: '^[a-z0-9][a-z0-9-]*$', maxLength: 200 });
/** The write success shape: `{status, id, revision, warnings}`. */
export const WriteResult = answer({
  status: s.enum(['created', 'updated', 'skipped']),
  id: s.string(),
  revision: s.stringOrNull(),
  warnings: s.array(s.string()),
});
