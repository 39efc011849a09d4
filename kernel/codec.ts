/**
 * Node file codec: a node is YAML frontmatter between `---` lines, then a markdown body
 * (docs/design.md §3).
 *
 * Three entry points:
 *  - `parseNodeMarkdown`: the canonical, strict parser for client-supplied markdown.
 *    unified + remark-parse + remark-frontmatter locate the leading `---` block; the `yaml`
 *    package (YAML 1.2 core schema) parses it; the result is checked to be plain JSON data.
 *  - `serializeNode`: the deterministic writer (same node -> same bytes).
 *  - `parseStoredNode`: the fast loader for files `serializeNode` wrote (split on the fences,
 *    js-yaml CORE_SCHEMA). test/kernel/codec.test.ts proves it equals `parseNodeMarkdown` on
 *    every serializer output by a property test.
 *
 * Body convention (both parsers): the body is everything after the closing `---` line; only
 * that fence line's own line ending (`\n`, `\r\n` or `\r`) is removed, nothing else. So
 * `---\n...\n---\nBody` gives `Body` and `---\n...\n---\n\nBody` gives `\nBody` (a blank
 * line after the fence is preserved, which keeps client files byte-stable through a
 * parse/serialize cycle). `serializeNode` writes the body directly after `---\n` and
 * normalizes only its end (see `normalizeBody`); CR/CRLF inside the body is kept as is.
 */
import { unified } from 'unified';
import remarkParse from 'remark-parse';
import remarkFrontmatter from 'remark-frontmatter';
import { Document, LineCounter, Scalar, isAlias, isMap, isScalar, isSeq, parseDocument, visit, type Node as YamlNode } from 'yaml';
import * as jsyaml from 'js-yaml';

export type Frontmatter = Record<string, unknown>;

export interface ParsedNode {
  frontmatter: Frontmatter;
  body: string;
}

export class CodecError extends Error {
  constructor(
    message: string,
    readonly errors: string[],
  ) {
    super(message);
    this.name = 'CodecError';
  }
}

/** The attribution stamps the server writes on every node it commits (a client's values are replaced). */
export const STAMP_KEYS = ['author', 'authored_via', 'authored_by_agent', 'session'] as const;

/** Top-level frontmatter keys, in the order the serializer writes them (when present). */
export const CANONICAL_KEY_ORDER: readonly string[] = [
  'id',
  'type',
  'status',
  'title',
  'summary',
  'project',
  'priority',
  'priority_by',
  'priority_at',
  'priority_via',
  'readiness',
  'readiness_by',
  'readiness_at',
  'readiness_via',
  ...STAMP_KEYS,
  'created',
  'updated',
  'commits',
  'edges',
];
const CANONICAL_RANK = new Map(CANONICAL_KEY_ORDER.map((k, i) => [k, i]));

/** Sort by Unicode code point (not UTF-16 code unit, not locale). */
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length) {
    const ca = a.codePointAt(i)!;
    const cb = b.codePointAt(i)!;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
  }
  if (i < a.length) return 1;
  if (i < b.length) return -1;
  return 0;
}

/**
 * Body normalization applied by `serializeNode`: trailing line endings are collapsed so a
 * non-empty body ends with exactly one `\n`; a body that is empty or only line endings
 * becomes `''` (the file then ends right after the closing `---\n`). Nothing else changes.
 */
export function normalizeBody(body: string): string {
  let end = body.length;
  while (end > 0) {
    const c = body.charCodeAt(end - 1);
    if (c !== 10 && c !== 13) break;
    end--;
  }
  return end === 0 ? '' : body.slice(0, end) + '\n';
}

// ---------------------------------------------------------------------------------------
// Helpers shared by both directions

function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  // A plain assignment to `__proto__` would change the prototype instead of adding a key.
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function pathString(path: readonly (string | number)[]): string {
  if (path.length === 0) return '(root)';
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(p)) out += out ? `.${p}` : p;
    else out += `[${JSON.stringify(p)}]`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// parseNodeMarkdown

const markdownProcessor = unified().use(remarkParse).use(remarkFrontmatter, ['yaml']);

const OPENING_FENCE = /^---[ \t]*(?:\r\n|\n|\r)/;
/** Aliases are expanded into copies; this caps the nodes produced through them. */
const MAX_ALIAS_EXPANSION = 10_000;
/** Explicit tags that still yield JSON data; anything else (`!!binary`, `!!timestamp`, `!!set`, `!!omap`, `!local`) is rejected. */
const ALLOWED_TAGS = new Set(['str', 'int', 'float', 'bool', 'null', 'map', 'seq'].map((t) => `tag:yaml.org,2002:${t}`));

interface PositionedNode {
  type: string;
  position?: { start: { offset?: number }; end: { offset?: number } };
}

/**
 * Parse client-supplied markdown. Throws `CodecError` when the document does not start with
 * a frontmatter block, the block is unterminated, the YAML is invalid, or it is not a mapping.
 *
 * JSON-compatibility policy (the result contains only objects, arrays, strings, finite
 * numbers, booleans and null):
 *  - timestamps stay strings (the core schema has no timestamp type);
 *  - `.inf`, `-.inf`, `.nan` are REJECTED (non-finite numbers), not stringified;
 *  - explicit tags other than the JSON ones (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`,
 *    `!!map`, `!!seq`) are REJECTED: `!!binary`, `!!timestamp`, `!!set`, `!!omap` (which yaml
 *    would turn into Uint8Array, Date, ...) and local tags like `!custom` (which yaml reports
 *    as an unresolved-tag warning; every yaml warning is treated as an error here);
 *  - `-0` becomes `0` (JSON has no negative zero);
 *  - mapping keys must be scalars; number/boolean keys become their string form (`1: a` ->
 *    `{"1": "a"}`), null and collection keys are rejected; two keys that end up as the same
 *    string (`a`/`a`, or `1`/`"1"`) are a duplicate-key error;
 *  - anchors/aliases are allowed and expanded into independent copies (bounded).
 */
export function parseNodeMarkdown(text: string): ParsedNode {
  if (typeof text !== 'string') throw new CodecError('node markdown must be a string', ['not a string']);
  // A UTF-8 BOM before the opening fence is tolerated and dropped.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);

  const opening = OPENING_FENCE.exec(text);
  if (!opening) {
    if (/^---[ \t]*$/.test(text)) {
      const reason = "the document is only an opening '---' line; frontmatter needs a closing '---' line";
      throw new CodecError(`unterminated frontmatter: ${reason}`, [reason]);
    }
    const reason = "the document must start with a '---' line opening a YAML frontmatter block";
    throw new CodecError(`no frontmatter: ${reason}`, [reason]);
  }

  const tree = markdownProcessor.parse(text) as { children: PositionedNode[] };
  const first = tree.children[0];
  const endOffset = first?.type === 'yaml' ? first.position?.end.offset : undefined;
  if (endOffset === undefined) {
    const reason = "the frontmatter block opened on line 1 has no closing '---' line";
    throw new CodecError(`unterminated frontmatter: ${reason}`, [reason]);
  }

  // The yaml node spans from the opening fence to the end of the closing fence (before its
  // line ending). Slice the YAML from the source itself: the mdast value is not byte-exact
  // (micromark replaces NUL, for instance).
  const contentStart = opening[0].length;
  let closeLineStart = endOffset;
  while (closeLineStart > contentStart) {
    const c = text.charCodeAt(closeLineStart - 1);
    if (c === 10 || c === 13) break;
    closeLineStart--;
  }
  const yamlSource = text.slice(contentStart, closeLineStart);

  let body = text.slice(endOffset);
  if (body.startsWith('\r\n')) body = body.slice(2);
  else if (body.startsWith('\n') || body.startsWith('\r')) body = body.slice(1);

  return { frontmatter: parseFrontmatterYaml(yamlSource, 1), body };
}

/** `lineOffset`: how many document lines precede the YAML source (the opening fence). */
function parseFrontmatterYaml(source: string, lineOffset: number): Frontmatter {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, {
    version: '1.2',
    schema: 'core',
    merge: false,
    // Duplicate keys are detected below, after key stringification, with the key's name.
    uniqueKeys: false,
    intAsBigInt: false,
    prettyErrors: false,
    strict: true,
    lineCounter,
  });
  const where = (offset: number): string => {
    const { line, col } = lineCounter.linePos(offset);
    return `line ${line + lineOffset}, column ${col}`;
  };

  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length > 0) {
    const errs = problems.map((e) => `${where(e.pos[0])}: ${e.message.split('\n')[0]}`);
    throw new CodecError(`invalid YAML in frontmatter: ${errs[0]}`, errs);
  }

  const root = doc.contents;
  if (root === null || (isScalar(root) && root.value === null && !root.tag)) {
    const reason = 'the frontmatter block is empty; it must be a YAML mapping (key: value lines)';
    throw new CodecError(`frontmatter is not a mapping: ${reason}`, [reason]);
  }
  if (!isMap(root)) {
    const got = isSeq(root) ? 'a sequence' : isAlias(root) ? 'an alias' : 'a scalar';
    const reason = `the frontmatter must be a YAML mapping (key: value lines), got ${got}`;
    throw new CodecError(`frontmatter is not a mapping: ${reason}`, [reason]);
  }

  const errors: string[] = [];
  let aliasBudget = MAX_ALIAS_EXPANSION;
  const active = new Set<YamlNode>();

  const convert = (node: unknown, path: (string | number)[], viaAlias: boolean): unknown => {
    if (viaAlias && --aliasBudget < 0) {
      if (aliasBudget === -1) errors.push(`alias expansion exceeds ${MAX_ALIAS_EXPANSION} nodes`);
      return null;
    }
    if (node === null || node === undefined) return null; // e.g. `key:` with no value
    if (isAlias(node)) {
      const target = node.resolve(doc);
      if (!target) {
        errors.push(`${pathString(path)}: unresolved alias *${node.source}`);
        return null;
      }
      if (active.has(target)) {
        errors.push(`${pathString(path)}: recursive alias *${node.source}`);
        return null;
      }
      return convert(target, path, true);
    }
    if ((isScalar(node) || isMap(node) || isSeq(node)) && node.tag && !ALLOWED_TAGS.has(node.tag)) {
      errors.push(`${pathString(path)}: explicit tag ${node.tag} is not supported (only plain JSON data is allowed)`);
      return null;
    }
    if (isScalar(node)) {
      const v = node.value;
      if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
      if (typeof v === 'number') {
        if (!Number.isFinite(v)) {
          errors.push(`${pathString(path)}: non-finite number ${String(v)} is not allowed (quote it to keep a string)`);
          return null;
        }
        return v === 0 ? 0 : v; // -0 -> 0
      }
      errors.push(`${pathString(path)}: unsupported value of type ${typeof v}`);
      return null;
    }
    if (isSeq(node)) {
      active.add(node);
      const out = node.items.map((item, i) => convert(item, [...path, i], viaAlias));
      active.delete(node);
      return out;
    }
    if (isMap(node)) {
      active.add(node);
      const out: Record<string, unknown> = {};
      const seen = new Set<string>();
      for (const pair of node.items) {
        let keyNode: unknown = pair.key;
        if (isAlias(keyNode)) keyNode = keyNode.resolve(doc);
        if (!isScalar(keyNode)) {
          errors.push(`${pathString(path)}: mapping keys must be plain strings (found a collection or empty key)`);
          continue;
        }
        const kv = keyNode.value;
        if (kv === null || (typeof kv !== 'string' && typeof kv !== 'number' && typeof kv !== 'boolean')) {
          errors.push(`${pathString(path)}: mapping keys must be strings (found a null key)`);
          continue;
        }
        const key = String(kv);
        if (seen.has(key)) {
          const at = keyNode.range ? `${where(keyNode.range[0])}: ` : '';
          const where2 = path.length ? ` in ${pathString(path)}` : '';
          errors.push(`${at}duplicate key ${JSON.stringify(key)}${where2}`);
          continue;
        }
        seen.add(key);
        setKey(out, key, convert(pair.value, [...path, key], viaAlias));
      }
      active.delete(node);
      return out;
    }
    errors.push(`${pathString(path)}: unsupported YAML node`);
    return null;
  };

  const frontmatter = convert(root, [], false) as Frontmatter;
  if (errors.length > 0) {
    const dup = errors.find((e) => e.includes('duplicate key'));
    throw new CodecError(`invalid frontmatter: ${dup ?? errors[0]}`, errors);
  }
  return frontmatter;
}

// ---------------------------------------------------------------------------------------
// serializeNode

/**
 * Strings that js-yaml's CORE_SCHEMA would resolve to a non-string when written plain.
 * The `yaml` package already quotes strings its own core schema would resolve, but js-yaml's
 * resolvers are wider: `-0x1F`, `+0x1F`, `0b101`, `-0o17`, `+0o17`, `-0b1` are numbers to
 * js-yaml and strings to yaml, so yaml writes them plain. Forcing double quotes on every
 * string any of js-yaml's implicit resolvers accept makes both parsers read a string.
 */
const jsyamlImplicit = (jsyaml as unknown as { types: Record<'null' | 'bool' | 'int' | 'float', jsyaml.Type> }).types;
const JSYAML_RESOLVERS = [jsyamlImplicit.null, jsyamlImplicit.bool, jsyamlImplicit.int, jsyamlImplicit.float];

/**
 * Characters the `yaml` package writes raw although the two parsers do not read them back
 * alike:
 *  - U+007F-U+009F: outside YAML's printable set. yaml picks double quotes for them but
 *    escapes with JSON.stringify, which leaves them raw; js-yaml then rejects the document
 *    ("the stream contains non-printable characters").
 *  - U+FFFE, U+FFFF: also non-printable; yaml writes them plain. Same js-yaml rejection.
 *  - U+FEFF: yaml writes it plain, and yaml's own lexer then drops it as a byte-order mark at
 *    the start of a line (`\ufeffa: 1` reads back as key `a`), while js-yaml keeps it.
 * Strings containing any of them are forced to double quotes and the characters are escaped
 * after stringifying (see `escapeNonPrintable`).
 */
const NON_PRINTABLE_RAW = /[\u007f-\u009f\ufeff\ufffe\uffff]/;
const NON_PRINTABLE_RAW_G = /[\u007f-\u009f\ufeff\ufffe\uffff]/g;

/**
 * Multi-line strings made only of spaces, tabs and line breaks (`" \n"`, `" \n\n\n"`): yaml
 * writes them as a `|+` block whose only lines are blank, and a block scalar without a
 * non-blank line cannot carry its indentation, so both parsers read the spaces back as
 * nothing (`" \n"` -> `"\n"`). Forced to double quotes.
 */
const BLANK_MULTILINE = /^[ \t\r\n]*\n[ \t\r\n]*$/;

function mustDoubleQuote(s: string): boolean {
  if (NON_PRINTABLE_RAW.test(s)) return true;
  if (s.includes('\n')) return BLANK_MULTILINE.test(s);
  // Only short strings can be numbers/booleans/null; skip the resolvers for the rest.
  if (s.length > 40 || s.includes(' ')) return false;
  for (const t of JSYAML_RESOLVERS) if (t.resolve(s)) return true;
  return false;
}

/**
 * Only valid because every string containing such a character was forced to double quotes
 * (and yaml does so itself for U+007F-U+009F): nothing else in the output can contain them.
 */
function escapeNonPrintable(yamlText: string): string {
  return yamlText.replace(NON_PRINTABLE_RAW_G, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`;
  });
}

const STRINGIFY_OPTIONS = {
  lineWidth: 0, // never fold
  minContentWidth: 0,
  indent: 2,
  indentSeq: true,
  blockQuote: 'literal' as const, // multi-line strings as `|` blocks, never folded `>`
  singleQuote: false, // when quoting, always double quotes (one escaping scheme)
  // Keep double-quoted strings on one line (`\n` escapes) instead of yaml's multi-line
  // double-quoted form, so no frontmatter line is ever a bare `---`.
  doubleQuotedMinMultiLineLength: Number.POSITIVE_INFINITY,
  defaultStringType: 'PLAIN' as const,
  defaultKeyType: null,
  nullStr: 'null',
  trueStr: 'true',
  falseStr: 'false',
  directives: false,
};

/**
 * Convert a value to plain JSON data: drops `undefined` object properties (and `undefined`
 * array elements become null, as in JSON.stringify), turns -0 into 0, and rejects anything
 * else non-JSON (non-finite numbers, bigint, functions, symbols, Dates, Maps, class
 * instances, cycles).
 */
function toJsonData(v: unknown, path: (string | number)[], stack: Set<object>, edges: boolean): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      if (!Number.isFinite(v)) {
        throw new CodecError(`cannot serialize ${pathString(path)}: non-finite number ${v}`, [`${pathString(path)}: non-finite number`]);
      }
      return v === 0 ? 0 : v;
    case 'undefined':
      return null;
    case 'object':
      break;
    default:
      throw new CodecError(`cannot serialize ${pathString(path)}: ${typeof v} is not JSON data`, [`${pathString(path)}: ${typeof v}`]);
  }
  if (v === null) return null;
  if (stack.has(v)) {
    throw new CodecError(`cannot serialize ${pathString(path)}: circular reference`, [`${pathString(path)}: circular reference`]);
  }
  stack.add(v);
  let out: unknown;
  if (Array.isArray(v)) {
    out = v.map((item, i) =>
      edges && isPlainObject(item) ? edgeToJsonData(item, [...path, i], stack) : toJsonData(item, [...path, i], stack, false),
    );
  } else if (isPlainObject(v)) {
    const obj: Record<string, unknown> = {};
    for (const key of Object.keys(v)) {
      if (v[key] === undefined) continue;
      setKey(obj, key, toJsonData(v[key], [...path, key], stack, false));
    }
    out = obj;
  } else {
    const name = (v as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    throw new CodecError(`cannot serialize ${pathString(path)}: ${name} is not JSON data`, [`${pathString(path)}: ${name}`]);
  }
  stack.delete(v);
  return out;
}

/** Edge objects: `type`, `to` first, then the other attributes by code point. */
function edgeToJsonData(edge: Record<string, unknown>, path: (string | number)[], stack: Set<object>): unknown {
  stack.add(edge);
  const keys = Object.keys(edge).filter((k) => edge[k] !== undefined);
  const rank = (k: string) => (k === 'type' ? 0 : k === 'to' ? 1 : 2);
  keys.sort((a, b) => rank(a) - rank(b) || compareCodePoints(a, b));
  const out: Record<string, unknown> = {};
  for (const key of keys) setKey(out, key, toJsonData(edge[key], [...path, key], stack, false));
  stack.delete(edge);
  return out;
}

/** Canonical frontmatter: plain JSON data, top-level keys in canonical order. */
export function canonicalFrontmatter(frontmatter: Frontmatter): Frontmatter {
  if (!isPlainObject(frontmatter)) {
    throw new CodecError('frontmatter must be a plain object', ['frontmatter is not a plain object']);
  }
  const keys = Object.keys(frontmatter).filter((k) => frontmatter[k] !== undefined);
  keys.sort((a, b) => {
    const ra = CANONICAL_RANK.get(a);
    const rb = CANONICAL_RANK.get(b);
    if (ra !== undefined && rb !== undefined) return ra - rb;
    if (ra !== undefined) return -1;
    if (rb !== undefined) return 1;
    return compareCodePoints(a, b);
  });
  const stack = new Set<object>([frontmatter]);
  const out: Record<string, unknown> = {};
  for (const key of keys) setKey(out, key, toJsonData(frontmatter[key], [key], stack, key === 'edges'));
  return out;
}

/**
 * Deterministic serializer: `---\n<yaml>---\n<body>`. See `canonicalFrontmatter` for key
 * order and value rules and `normalizeBody` for the body. An empty frontmatter is written as
 * `{}` (still a mapping for both parsers).
 */
export function serializeNode(frontmatter: Frontmatter, body: string): string {
  if (typeof body !== 'string') throw new CodecError('body must be a string', ['body is not a string']);
  const data = canonicalFrontmatter(frontmatter);
  const keys = Object.keys(data);
  let yamlText = keys.length === 0 ? yamlOf(data) : '';
  for (const key of keys) yamlText += pairText(key, data[key]);
  return `---\n${yamlText}---\n${normalizeBody(body)}`;
}

/** The YAML of canonical frontmatter as one document (what `serializeNode` writes; tests compare). */
export function yamlOf(data: Frontmatter): string {
  const doc = new Document(data, { version: '1.2', schema: 'core', aliasDuplicateObjects: false });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && mustDoubleQuote(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return escapeNonPrintable(doc.toString(STRINGIFY_OPTIONS));
}

/**
 * A top-level block mapping is its pairs' texts one after another, so a node's YAML is built
 * pair by pair, each pair's text kept by its key and its value's JSON (canonical data: JSON is
 * exact for it). A write changes one or two fields of a node, and fields like `type: task` repeat
 * across nodes: the YAML library, about a tenth of a soak's server CPU, then runs only for what
 * changed. The table is bounded by its characters and emptied when full.
 */
const pairTexts = new Map<string, string>();
let pairChars = 0;
const PAIR_TEXT_CHARS = 4 * 1024 * 1024;

function pairText(key: string, value: unknown): string {
  const id = `${JSON.stringify(key)}:${JSON.stringify(value)}`;
  let text = pairTexts.get(id);
  if (text === undefined) {
    text = yamlOf({ [key]: value });
    if (pairChars + id.length + text.length > PAIR_TEXT_CHARS) {
      pairTexts.clear();
      pairChars = 0;
    }
    pairTexts.set(id, text);
    pairChars += id.length + text.length;
  }
  return text;
}

// ---------------------------------------------------------------------------------------
// parseStoredNode

const JSYAML_LOAD_OPTIONS: jsyaml.LoadOptions = { schema: jsyaml.CORE_SCHEMA, json: false };

/**
 * Fast parser for files `serializeNode` wrote: `---\n`, YAML up to the first `\n---\n`
 * (the serializer never writes a bare `---` line inside the YAML: block scalars are
 * indented and double-quoted strings stay on one line), then the body. The YAML goes through
 * js-yaml CORE_SCHEMA (duplicate keys throw). If the file does not have that shape or js-yaml
 * rejects it, this falls back to `parseNodeMarkdown`, which gives the precise CodecError (or a
 * result, for a hand-edited but valid file). Equivalence with `parseNodeMarkdown` is
 * guaranteed (and property-tested) for serializer output only.
 */
export function parseStoredNode(text: string): ParsedNode {
  return parseStoredNodeFast(text) ?? parseNodeMarkdown(text);
}

/**
 * Client markdown: when the text is byte for byte what `serializeNode` writes for what the
 * fast path read from it (a client that read a node and changed a value), the fast path's
 * result is the canonical one (the equivalence property covers every serializer output);
 * anything else goes through `parseNodeMarkdown`. Saves the unified parse (~0.7 ms) on
 * round-tripped nodes.
 */
export function parseClientMarkdown(text: string): ParsedNode {
  const fast = parseStoredNodeFast(text);
  if (fast) {
    try {
      if (serializeNode(fast.frontmatter, fast.body) === text) return fast;
    } catch {
      // not serializable as it is: the canonical parser gives the precise error
    }
  }
  return parseNodeMarkdown(text);
}

/** The fast path alone: `undefined` when the text is not in the serializer's shape. */
export function parseStoredNodeFast(text: string): ParsedNode | undefined {
  if (!text.startsWith('---\n')) return undefined;
  let close = text.indexOf('\n---\n', 3);
  let bodyStart = close + 5;
  if (close < 0) {
    if (!text.endsWith('\n---')) return undefined;
    close = text.length - 4;
    bodyStart = text.length;
  }
  let data: unknown;
  try {
    data = jsyaml.load(text.slice(4, close + 1), JSYAML_LOAD_OPTIONS);
  } catch {
    return undefined;
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
  return { frontmatter: data as Frontmatter, body: text.slice(bodyStart) };
}
