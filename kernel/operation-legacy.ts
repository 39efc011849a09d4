/**
 * TRANSITIONAL (issue 23): the untyped schema builders and `defineOperation` as they were before
 * the typed builders of kernel/operation.ts. A plugin file still importing from here declares
 * schemas whose TypeScript types are written by hand; converting it means importing from
 * kernel/operation.ts instead and letting `Static<typeof schema>` type the input and answer.
 * This file is deleted when no importer is left.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import type { OpContext } from './plugin.js';
import type { JsonSchema, OperationDef } from './operation.js';

export * from './operation.js';

export interface LegacyOperationSpec<I = any, O = any> {
  name: string;
  summary: string;
  description?: string;
  input: JsonSchema;
  output?: JsonSchema;
  produces?: string[];
  errors?: number[];
  alsoSucceedsWith?: number[];
  redirects?: number[];
  example?: Record<string, unknown>;
  run: (ctx: OpContext, input: I) => Promise<O>;
}

export type LegacyOperationDef<I, O> = Omit<OperationDef<I, O>, 'run'> & { run(ctx: OpContext, input: I): Promise<O> };

export function defineOperation<I = any, O = any>(spec: LegacyOperationSpec<I, O>): LegacyOperationDef<I, O> {
  if (!/^[a-z][a-z0-9_]*$/.test(spec.name)) throw new Error(`operation '${spec.name}': name must be snake_case`);
  if (spec.input.type !== 'object') throw new Error(`operation '${spec.name}': input must be an object schema`);
  return { ...spec, kind: 'operation' };
}

export function object(properties: Record<string, JsonSchema>, required: string[] = [], extra: JsonSchema = {}): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false, ...extra };
}

export function answer(properties: Record<string, JsonSchema>, required: string[] = Object.keys(properties)): JsonSchema {
  return { type: 'object', properties, required };
}

export const s = {
  string: (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...(description ? { description } : {}), ...extra }),
  integer: (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...(description ? { description } : {}), ...extra }),
  number: (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'number', ...(description ? { description } : {}), ...extra }),
  boolean: (description?: string): JsonSchema => ({ type: 'boolean', ...(description ? { description } : {}) }),
  array: (items: JsonSchema, description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'array', items, ...(description ? { description } : {}), ...extra }),
  nullable: (schema: JsonSchema): JsonSchema =>
    typeof schema.type === 'string' && !schema.enum && !schema.const ? { ...schema, type: [schema.type, 'null'] } : { anyOf: [schema, { type: 'null' }] },
  stringOrNull: (description?: string): JsonSchema => ({ type: ['string', 'null'], ...(description ? { description } : {}) }),
  enum: (values: unknown[], description?: string): JsonSchema => ({ enum: values, ...(description ? { description } : {}) }),
  object: (description?: string): JsonSchema => ({ type: 'object', ...(description ? { description } : {}) }),
  any: (description?: string): JsonSchema => (description ? { description } : {}),
};

export const NodeId: JsonSchema = { type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$', maxLength: 200, description: 'node id, e.g. task-fix-login' };
export const WriteResult: JsonSchema = answer({
  status: { enum: ['created', 'updated', 'skipped'] },
  id: { type: 'string' },
  revision: { type: ['string', 'null'] },
  warnings: { type: 'array', items: { type: 'string' } },
});
