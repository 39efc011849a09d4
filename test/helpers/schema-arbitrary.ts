/**
 * fast-check arbitraries from the JSON Schemas of the OpenAPI document: values that satisfy a
 * schema (for valid requests) and mutations that break it (for invalid ones). Covers the
 * subset the operation declarations use: type (or a list of types), enum, const, pattern,
 * min/maxLength, minimum/maximum, items, min/maxItems, properties, required,
 * additionalProperties, anyOf/oneOf.
 */
import fc from 'fast-check';

export type Schema = Record<string, any>;

export interface ArbitraryOptions {
  /** values to prefer for id-like strings (existing node ids, so requests reach past the 404) */
  ids: string[];
}

const ID_PATTERN = '^[a-z0-9][a-z0-9-]*$';

function stringOf(schema: Schema, opts: ArbitraryOptions): fc.Arbitrary<string> {
  const min: number = schema.minLength ?? 0;
  const max: number = Math.min(schema.maxLength ?? 40, 60);
  const fits = (s: string) => s.length >= min && s.length <= (schema.maxLength ?? Infinity);
  if (schema.pattern) {
    // a size that reaches minLength without long searches (a filter that rejects most values hangs)
    const size = min <= 3 ? 'xsmall' : min <= 12 ? 'small' : 'medium';
    const matching = fc.stringMatching(new RegExp(schema.pattern), { size }).filter(fits);
    if (schema.pattern === ID_PATTERN && opts.ids.length > 0)
      return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...opts.ids) }, { weight: 1, arbitrary: matching });
    return matching;
  }
  return fc.string({ minLength: min, maxLength: Math.max(min, max) });
}

/** An arbitrary of values valid against `schema`. */
export function valueOf(schema: Schema | undefined, opts: ArbitraryOptions, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || Object.keys(schema).filter((k) => k !== 'description').length === 0) {
    return fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean());
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...(alternatives as Schema[]).map((s) => valueOf(s, opts, depth + 1)));
  const types: string[] = [schema.type].flat().filter(Boolean);
  if (types.length > 1) return fc.oneof(...types.map((type) => valueOf({ ...schema, type }, opts, depth)));
  switch (types[0]) {
    case 'string':
      return stringOf(schema, opts);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -5, max: schema.maximum ?? 1000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -5, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength: number = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 3, depth > 1 ? 1 : 3));
      return fc.array(valueOf(schema.items, opts, depth + 1), { minLength, maxLength });
    }
    case 'object':
    default:
      return objectOf(schema, opts, depth);
  }
}

function objectOf(schema: Schema, opts: ArbitraryOptions, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props: Record<string, Schema> = schema.properties ?? {};
  const required = new Set<string>(schema.required ?? []);
  if (Object.keys(props).length === 0) {
    if (schema.additionalProperties === false || depth > 2) return fc.constant({});
    const values =
      typeof schema.additionalProperties === 'object' ? valueOf(schema.additionalProperties, opts, depth + 1) : fc.string({ maxLength: 6 });
    return fc.dictionary(fc.stringMatching(/^[a-z][a-z_]{0,6}$/), values, { maxKeys: 2 });
  }
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, v] of Object.entries(props)) model[k] = valueOf(v, opts, depth + 1);
  return fc.record(model, { requiredKeys: [...required].filter((k) => k in props) }) as fc.Arbitrary<Record<string, unknown>>;
}

/** A value of the wrong type for `schema` (when the schema constrains the type at all). */
export function wrongValueOf(schema: Schema | undefined): fc.Arbitrary<unknown> | null {
  const types: string[] = [schema?.type].flat().filter(Boolean);
  if (types.length === 0 || schema?.anyOf || schema?.oneOf) return null;
  const candidates: Array<[string, fc.Arbitrary<unknown>]> = [
    ['string', fc.string({ minLength: 1, maxLength: 5 })],
    ['integer', fc.integer({ min: 2, max: 99 })],
    ['boolean', fc.boolean()],
    ['array', fc.constant([1, 'x'])],
    ['object', fc.constant({ unexpected: { nested: true } })],
  ];
  const wrong = candidates.filter(([type]) => !types.includes(type) && !(type === 'integer' && types.includes('number')));
  return wrong.length > 0 ? fc.oneof(...wrong.map(([, a]) => a)) : null;
}
