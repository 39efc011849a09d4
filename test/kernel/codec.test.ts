// size: property tests and examples for every codec rule (frontmatter order, YAML, ids) in one place.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  CANONICAL_KEY_ORDER,
  canonicalFrontmatter,
  CodecError,
  normalizeBody,
  parseClientMarkdown,
  parseNodeMarkdown,
  parseStoredNode,
  parseStoredNodeFast,
  serializeNode,
  yamlOf,
  type Frontmatter,
} from '../../kernel/codec.js';

/** What a frontmatter should read back as: JSON semantics (undefined dropped, -0 -> 0). */
function jsonNormalize(fm: Frontmatter): Frontmatter {
  return JSON.parse(JSON.stringify(fm)) as Frontmatter;
}

function expectCodecError(fn: () => unknown, pattern: RegExp): CodecError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected a CodecError').to.be.instanceOf(CodecError);
  const err = caught as CodecError;
  expect(err.message).to.match(pattern);
  expect(err.errors).to.be.an('array').that.is.not.empty;
  return err;
}

/** Strings YAML (1.1, 1.2 core, or js-yaml) might read as something else, or that need care. */
const TRICKY: string[] = [
  '',
  ' ',
  '  ',
  '  lead',
  'trail ',
  ' both ',
  '123',
  '-1',
  '+1',
  '017',
  '0',
  '-0',
  '1.5',
  '-1.5',
  '1.',
  '.5',
  '1e3',
  '1E3',
  '1e+21',
  '-1e-7',
  '0x1F',
  '-0x1F',
  '+0x1F',
  '0o17',
  '-0o17',
  '0b101',
  '-0b1',
  '1_000',
  '1,000',
  '12:30',
  '1:20:30',
  '.inf',
  '-.inf',
  '+.inf',
  '.Inf',
  '.INF',
  '.nan',
  '.NaN',
  '.NAN',
  'true',
  'True',
  'TRUE',
  'false',
  'False',
  'yes',
  'Yes',
  'no',
  'on',
  'off',
  'y',
  'n',
  'null',
  'Null',
  'NULL',
  '~',
  '2026-01-01',
  '2026-01-01T10:00:00Z',
  '2026-01-01 10:00:00.5 +01:00',
  'a: b',
  'a:b',
  'a:',
  ':',
  ': a',
  'a #b',
  'a#b',
  '#x',
  '# x',
  '- x',
  '-',
  '--',
  '---',
  '--- x',
  '...',
  '.',
  '? x',
  '?',
  '?x',
  '* x',
  '*a',
  '&a',
  '!x',
  '!!str',
  '!!binary',
  '|',
  '|-',
  '>',
  '>-',
  "'x",
  '"x',
  "'",
  '"',
  '%x',
  '%YAML 1.2',
  '@x',
  '`x',
  '{a}',
  '{',
  '}',
  '[a]',
  '[',
  ']',
  'a,b',
  ',',
  '=',
  '<<',
  '\\',
  '\\n',
  'a\\b',
  'a\nb',
  'a\n',
  '\n',
  '\n\n',
  'a\n\n',
  'a\n\n\n',
  '\na',
  ' \n',
  '\n ',
  'a \nb',
  'a\n b',
  'a\n\tb',
  '\ta',
  'a\tb',
  'a\t',
  '\t',
  'a\r\nb',
  'a\rb',
  '\r',
  '\r\n',
  'x\n---\ny',
  '---\n',
  '\n---\n',
  '\n---',
  '...\n',
  '  indented\n  block\n',
  'line1\n  line2\n\n',
  'key: value\n- item\n',
  '"quoted"',
  "it's",
  'é',
  'naïve café',
  '日本語',
  '😀',
  'a😀b',
  '\u0000',
  'a\u0000b',
  '\u0007',
  '\u001b',
  '\u007f',
  '\u0080',
  '\u0085',
  'a\u0085b',
  '\u009f',
  '\u00a0',
  'x\u00a0',
  '\u00a0x',
  '\u2028',
  'a\u2029b',
  '\ufeff',
  '\ufeffx',
  '\ufffe',
  '\uffff',
  '\ud800',
  'x\udc00',
  '\ud83d',
  '\ue000',
  '\ufffd',
  '__proto__',
  'constructor',
  'toString',
  "(input) => input.to !== 'done' || input.from === 'review'\n  ? { allow: true }\n  : { allow: false, reason: 'move to review first' }\n",
  '(input) => ({ ok: true, errors: [] })\n',
  'function (x) {\n\treturn x;\n}\n\n',
  '    deeply\n  less\n',
  'trailing spaces   \nline   \n',
];

const charUnit = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'z', 'A', '0', '1', '9', '_', '.', '/', '=') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      ' ',
      ' ',
      '\n',
      '\n',
      '\t',
      '\r',
      ':',
      '#',
      '-',
      '?',
      '*',
      '&',
      '!',
      '|',
      '>',
      "'",
      '"',
      '%',
      '@',
      '`',
      '[',
      ']',
      '{',
      '}',
      ',',
      '\\',
      '~',
      '+',
      'e',
      'x',
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\u0007',
      '\u001b',
      '\u007f',
      '\u0085',
      '\u009f',
      '\u00a0',
      '\u2028',
      '\u2029',
      '\ufeff',
      '\ufffe',
      '\uffff',
      '\ud800',
      '\udfff',
      '😀',
      'é',
      '日',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
);

const trickyString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TRICKY) },
  { weight: 3, arbitrary: fc.string({ unit: charUnit, maxLength: 24 }) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom(...TRICKY), fc.string({ unit: charUnit, maxLength: 6 })), { maxLength: 4 })
      .map((parts) => parts.join('')),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 16 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 16 }) },
);

/** Multi-line text like hook sources: indented lines, blank lines, trailing newlines. */
const multiLine = fc
  .tuple(
    fc.array(
      fc.tuple(
        fc.constantFrom('', ' ', '  ', '    ', '\t'),
        fc.oneof(fc.constantFrom('', 'return x;', '? a', '- b', '#c', 'k: v', '---', '...', '  '), fc.string({ maxLength: 12 })),
      ),
      { minLength: 1, maxLength: 6 },
    ),
    fc.constantFrom('', '\n', '\n\n', '\n\n\n'),
  )
  .map(([lines, end]) => lines.map(([ind, t]) => ind + t).join('\n') + end);

const str = fc.oneof({ weight: 5, arbitrary: trickyString }, { weight: 1, arbitrary: multiLine });

const num = fc.oneof(
  fc.integer(),
  fc.integer({ min: -100, max: 100 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 0.1, -2.5, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, -Number.MAX_SAFE_INTEGER, 2 ** 53, 123456789012345680000),
);

const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('a', 'b', 'weight', 'note', 'since', 'Z', 'é', '😀', '\uffff', 'x_y', 'x-y') },
  { weight: 2, arbitrary: trickyString },
);

const leaf = fc.oneof(str, num, fc.boolean(), fc.constant(null));

const { value: jsonValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  ),
}));

const edge = fc
  .tuple(
    fc.dictionary(key, fc.oneof(leaf, fc.constant(undefined)), { maxKeys: 3 }),
    fc.record({ to: str, type: fc.oneof(fc.constantFrom('blocks', 'resolves', 'member-of', 'relates-to'), str) }),
  )
  // attributes inserted first, so the serializer has to reorder `type`, `to` to the front
  .map(([attrs, core]) => ({ ...attrs, ...core }));

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });

const frontmatterArb: fc.Arbitrary<Frontmatter> = fc
  .tuple(
    fc.dictionary(key, jsonValue, { maxKeys: 5 }),
    fc.record(
      {
        summary: str,
        status: fc.oneof(fc.constantFrom('open', 'in-progress', 'done'), str),
        type: fc.oneof(fc.constantFrom('task', 'schema', 'dec'), str),
        id: fc.oneof(fc.constantFrom('task-1', 'schema-task-review-gate'), str),
        title: maybe(str),
        priority: maybe(fc.oneof(num, str)),
        created: fc.oneof(fc.constantFrom('2026-01-01T10:00:00Z', '2026-01-01'), str),
        commits: fc.array(fc.oneof(str, fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 40, maxLength: 40 })), {
          maxLength: 3,
        }),
        edges: fc.array(edge, { maxLength: 4 }),
        hooks: fc.dictionary(key, multiLine, { maxKeys: 2 }),
        statuses: fc.array(str, { maxLength: 4 }),
        flag: fc.boolean(),
        nothing: fc.constant(null),
        dropped: fc.constant(undefined),
        nested: fc.dictionary(key, fc.dictionary(key, leaf, { maxKeys: 3 }), { maxKeys: 3 }),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([extra, known]) => ({ ...extra, ...known }) as Frontmatter);

const bodyArb = fc.oneof(
  fc.string({ unit: charUnit, maxLength: 80 }),
  fc
    .array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom('---', '--- ', '---\t', '...', '', '# Heading', '- item', '* item', '***', '+++', '```', '<!-- x -->', 'id: x'),
          fc.string({ unit: 'grapheme', maxLength: 20 }),
          trickyString,
        ),
        fc.constantFrom('\n', '\n', '\r\n', '\r'),
      ),
      { maxLength: 10 },
    )
    .map((lines) => lines.map(([l, eol]) => l + eol).join('')),
);

describe('kernel/codec', () => {
  describe('serializeNode / parseNodeMarkdown round trip', () => {
    it('round-trips the docs/design.md schema-node example with hook sources exactly', () => {
      const fm: Frontmatter = {
        id: 'schema-task-review-gate',
        type: 'schema',
        status: 'proposed',
        summary: 'Tasks may only move to done from review',
        applies_to: 'task',
        statuses: ['open', 'in-progress', 'blocked', 'review', 'done', 'cancelled'],
        edge_types: [],
        hooks: {
          transition:
            "(input) => input.to !== 'done' || input.from === 'review'\n  ? { allow: true }\n  : { allow: false, reason: 'move to review first' }\n",
          validate: '(input) => ({ ok: true, errors: [] })\n',
        },
      };
      const text = serializeNode(fm, 'Why this rule exists.');
      expect(text).to.equal(
        [
          '---',
          'id: schema-task-review-gate',
          'type: schema',
          'status: proposed',
          'summary: Tasks may only move to done from review',
          'applies_to: task',
          'edge_types: []',
          'hooks:',
          '  transition: |',
          "    (input) => input.to !== 'done' || input.from === 'review'",
          '      ? { allow: true }',
          "      : { allow: false, reason: 'move to review first' }",
          '  validate: |',
          '    (input) => ({ ok: true, errors: [] })',
          'statuses:',
          '  - open',
          '  - in-progress',
          '  - blocked',
          '  - review',
          '  - done',
          '  - cancelled',
          '---',
          'Why this rule exists.',
          '',
        ].join('\n'),
      );
      const parsed = parseNodeMarkdown(text);
      expect(parsed).to.deep.equal({ frontmatter: fm, body: 'Why this rule exists.\n' });
      expect(parseStoredNode(text)).to.deep.equal(parsed);
      expect(serializeNode(parsed.frontmatter, parsed.body)).to.equal(text);
    });

    it('writes canonical keys first, then the rest by code point', () => {
      const fm: Frontmatter = {
        zeta: 1,
        edges: [],
        '\uffff': 1,
        '😀': 1,
        a: 1,
        Z: 1,
        é: 1,
        commits: [],
        updated: 'u',
        created: 'c',
        session: 's',
        authored_by_agent: true,
        authored_via: 'mcp',
        author: 'person-x',
        readiness_via: 'v',
        readiness_at: 't',
        readiness_by: 'b',
        readiness: 'ready',
        priority_via: 'v',
        priority_at: 't',
        priority_by: 'b',
        priority: 2,
        project: 'proj-root',
        summary: 's',
        title: 't',
        status: 'open',
        type: 'task',
        id: 'task-1',
      };
      const parsed = parseNodeMarkdown(serializeNode(fm, ''));
      // U+FFFF sorts before U+1F600 by code point (UTF-16 code-unit order would say otherwise).
      expect(Object.keys(parsed.frontmatter)).to.deep.equal([...CANONICAL_KEY_ORDER, 'Z', 'a', 'zeta', 'é', '\uffff', '😀']);
    });

    it('orders edge objects as type, to, then sorted attributes; other nested maps keep insertion order', () => {
      const fm: Frontmatter = {
        id: 'task-1',
        edges: [
          { weight: 1, to: 'task-2', since: 'x', type: 'blocks', b: 2 },
          { to: 'p', type: 'assigned' },
        ],
        meta: { zz: 1, aa: 2, mm: { y: 1, x: 2 } },
      };
      const text = serializeNode(fm, '');
      expect(text).to.equal(
        [
          '---',
          'id: task-1',
          'edges:',
          '  - type: blocks',
          '    to: task-2',
          '    b: 2',
          '    since: x',
          '    weight: 1',
          '  - type: assigned',
          '    to: p',
          'meta:',
          '  zz: 1',
          '  aa: 2',
          '  mm:',
          '    y: 1',
          '    x: 2',
          '---',
          '',
        ].join('\n'),
      );
      expect(Object.keys(parseNodeMarkdown(text).frontmatter.meta as object)).to.deep.equal(['zz', 'aa', 'mm']);
    });

    it('is deterministic regardless of top-level insertion order', () => {
      const a = serializeNode({ id: 'x', b: 1, a: 2, type: 't' }, 'body');
      const b = serializeNode({ a: 2, type: 't', b: 1, id: 'x' }, 'body');
      expect(a).to.equal(b);
    });

    it('drops undefined values (arrays: null, as in JSON) and writes -0 as 0', () => {
      const text = serializeNode({ id: 'x', gone: undefined, nested: { gone: undefined, kept: 1 }, list: [1, undefined], z: -0 }, '');
      expect(text).to.equal('---\nid: x\nlist:\n  - 1\n  - null\nnested:\n  kept: 1\nz: 0\n---\n');
      expect(Object.is(parseNodeMarkdown(text).frontmatter.z, 0)).to.equal(true);
    });

    it('round-trips every tricky string as a string, as key and as value, through both parsers', () => {
      for (const s of TRICKY) {
        const fm: Frontmatter = { id: s, summary: s, list: [s], map: { [s]: s }, edges: [{ type: s, to: s, [s]: s }] };
        const text = serializeNode(fm, '');
        const parsed = parseNodeMarkdown(text);
        expect(parsed.frontmatter, JSON.stringify(s) + '\n' + text).to.deep.equal(fm);
        expect(parseStoredNodeFast(text), JSON.stringify(s) + '\n' + text).to.deep.equal(parsed);
        expect(serializeNode(parsed.frontmatter, parsed.body)).to.equal(text);
      }
    });

    it('quotes strings that look like other scalars', () => {
      const text = serializeNode(
        { a: '123', b: 'true', c: 'null', d: '~', e: '0x1F', f: '-0x1F', g: '0b101', h: '.inf', i: '1e3', j: '' },
        '',
      );
      for (const line of text.split('\n').slice(1, -2)) expect(line, line).to.match(/^[a-j]: ".*"$/);
      // dates stay plain: neither parser has a timestamp type
      expect(serializeNode({ d: '2026-01-01' }, '')).to.equal('---\nd: 2026-01-01\n---\n');
    });

    it('escapes characters js-yaml would reject or yaml would drop (C1 controls, U+FEFF, U+FFFE/F)', () => {
      const s = 'a\u007fb\u0085c\ufeffd\ufffee\uffff';
      const text = serializeNode({ s, [s]: 1 }, '');
      expect(text).to.equal('---\n"a\\x7fb\\x85c\\ufeffd\\ufffee\\uffff": 1\ns: "a\\x7fb\\x85c\\ufeffd\\ufffee\\uffff"\n---\n');
      expect(parseNodeMarkdown(text).frontmatter).to.deep.equal({ s, [s]: 1 });
      expect(parseStoredNodeFast(text)?.frontmatter).to.deep.equal({ s, [s]: 1 });
    });

    it('round-trips multi-line strings exactly (indentation, blank lines, trailing newlines)', () => {
      const cases = [
        'a\nb',
        'a\nb\n',
        'a\nb\n\n\n',
        '  lead\nx\n',
        'x\n  y\n    z',
        '\n\nstart',
        ' \n',
        'a\n \n',
        'tab\n\tx\n',
        'x\n---\n...\ny\n',
      ];
      for (const s of cases) {
        const text = serializeNode({ hooks: { transition: s } }, '');
        expect((parseNodeMarkdown(text).frontmatter.hooks as Frontmatter).transition, JSON.stringify(s)).to.equal(s);
        expect((parseStoredNodeFast(text)?.frontmatter.hooks as Frontmatter).transition, JSON.stringify(s)).to.equal(s);
      }
    });

    it('keeps __proto__ as an ordinary key (no prototype change)', () => {
      const fm = JSON.parse('{"id":"x","__proto__":{"polluted":true}}') as Frontmatter;
      const text = serializeNode(fm, '');
      for (const parsed of [parseNodeMarkdown(text), parseStoredNodeFast(text)!]) {
        expect(Object.getPrototypeOf(parsed.frontmatter)).to.equal(Object.prototype);
        expect(Object.keys(parsed.frontmatter)).to.deep.equal(['id', '__proto__']);
        expect(parsed.frontmatter).to.deep.equal(fm);
      }
    });

    it('handles keys longer than YAML’s 1024-character implicit-key limit', () => {
      const k = 'k'.repeat(1500);
      const text = serializeNode({ [k]: 'v' }, '');
      expect(parseNodeMarkdown(text).frontmatter).to.deep.equal({ [k]: 'v' });
      expect(parseStoredNodeFast(text)?.frontmatter).to.deep.equal({ [k]: 'v' });
    });

    it('writes an empty frontmatter as {}', () => {
      const text = serializeNode({}, '');
      expect(text).to.equal('---\n{}\n---\n');
      expect(parseNodeMarkdown(text)).to.deep.equal({ frontmatter: {}, body: '' });
    });
  });

  describe('body convention', () => {
    it('removes only the closing fence line ending', () => {
      expect(parseNodeMarkdown('---\nid: a\n---\nBody').body).to.equal('Body');
      expect(parseNodeMarkdown('---\nid: a\n---\n\nBody').body).to.equal('\nBody');
      expect(parseNodeMarkdown('---\nid: a\n---').body).to.equal('');
      expect(parseNodeMarkdown('---\nid: a\n---\n').body).to.equal('');
      expect(parseNodeMarkdown('---\r\nid: a\r\n---\r\nBody\r\nmore\r\n')).to.deep.equal({
        frontmatter: { id: 'a' },
        body: 'Body\r\nmore\r\n',
      });
      expect(parseNodeMarkdown('--- \nid: a\n---  \nB').body).to.equal('B');
    });

    it('normalizes the body end to exactly one newline, and an empty body to nothing', () => {
      expect(serializeNode({ id: 'a' }, '')).to.equal('---\nid: a\n---\n');
      expect(serializeNode({ id: 'a' }, '\n\n')).to.equal('---\nid: a\n---\n');
      expect(serializeNode({ id: 'a' }, 'x')).to.equal('---\nid: a\n---\nx\n');
      expect(serializeNode({ id: 'a' }, 'x\n\n\r\n')).to.equal('---\nid: a\n---\nx\n');
      expect(serializeNode({ id: 'a' }, '\nx')).to.equal('---\nid: a\n---\n\nx\n');
      expect(normalizeBody('a\r\nb\r\n')).to.equal('a\r\nb\n');
    });

    it('keeps --- lines inside the body', () => {
      const text = serializeNode({ id: 'a' }, '---\nnot: frontmatter\n---\n');
      expect(parseNodeMarkdown(text)).to.deep.equal({ frontmatter: { id: 'a' }, body: '---\nnot: frontmatter\n---\n' });
      expect(parseStoredNode(text)).to.deep.equal(parseNodeMarkdown(text));
    });

    it('tolerates a byte-order mark before the opening fence', () => {
      expect(parseNodeMarkdown('\ufeff---\nid: a\n---\nB')).to.deep.equal({ frontmatter: { id: 'a' }, body: 'B' });
    });
  });

  describe('parseNodeMarkdown errors', () => {
    it('rejects a document without frontmatter', () => {
      expectCodecError(() => parseNodeMarkdown('# Title\n\nbody\n'), /no frontmatter/);
      expectCodecError(() => parseNodeMarkdown(''), /no frontmatter/);
      expectCodecError(() => parseNodeMarkdown(' ---\nid: a\n---\n'), /no frontmatter/);
    });

    it('rejects an unterminated frontmatter block', () => {
      expectCodecError(() => parseNodeMarkdown('---\nid: a\nbody\n'), /unterminated frontmatter/);
      expectCodecError(() => parseNodeMarkdown('---'), /unterminated frontmatter/);
      expectCodecError(() => parseNodeMarkdown('---\nid: a\n--- x\n'), /unterminated frontmatter/);
    });

    it('rejects invalid YAML, naming the document line', () => {
      const err = expectCodecError(() => parseNodeMarkdown('---\nid: a\nsummary: "open\n---\n'), /invalid YAML in frontmatter/);
      expect(err.errors[0]).to.match(/^line \d+, column \d+: /);
      const err2 = expectCodecError(() => parseNodeMarkdown('---\nid: a\nx: y: z\n---\n'), /invalid YAML/);
      expect(err2.errors[0]).to.match(/^line 3, column \d+:/);
    });

    it('rejects frontmatter that is not a mapping', () => {
      expectCodecError(() => parseNodeMarkdown('---\n- a\n- b\n---\n'), /not a mapping.*sequence/);
      expectCodecError(() => parseNodeMarkdown('---\njust a string\n---\n'), /not a mapping.*scalar/);
      expectCodecError(() => parseNodeMarkdown('---\n---\nbody'), /not a mapping.*empty/);
      expectCodecError(() => parseNodeMarkdown('---\n# only a comment\n---\n'), /not a mapping/);
    });

    it('rejects duplicate keys, also after key stringification and when nested', () => {
      const err = expectCodecError(() => parseNodeMarkdown('---\nid: a\nstatus: open\nid: b\n---\n'), /duplicate key "id"/);
      expect(err.errors[0]).to.match(/^line 4, column 1: /);
      expectCodecError(() => parseNodeMarkdown('---\n1: a\n"1": b\n---\n'), /duplicate key "1"/);
      expectCodecError(() => parseNodeMarkdown('---\nm:\n  k: 1\n  k: 2\n---\n'), /duplicate key "k" in m/);
    });

    it('rejects non-JSON values', () => {
      expectCodecError(() => parseNodeMarkdown('---\nn: .inf\n---\n'), /non-finite/);
      expectCodecError(() => parseNodeMarkdown('---\nn: [-.inf]\n---\n'), /non-finite/);
      expectCodecError(() => parseNodeMarkdown('---\nn: .nan\n---\n'), /non-finite/);
      expectCodecError(() => parseNodeMarkdown('---\nb: !!binary aGVsbG8=\n---\n'), /binary/);
      expectCodecError(() => parseNodeMarkdown('---\nt: !!timestamp 2026-01-01\n---\n'), /timestamp/);
      expectCodecError(() => parseNodeMarkdown('---\ns: !!set {a, b}\n---\n'), /set/);
      expectCodecError(() => parseNodeMarkdown('---\nx: !local thing\n---\n'), /tag/i);
      expectCodecError(() => parseNodeMarkdown('---\n? [a, b]\n: c\n---\n'), /keys must be/);
      expectCodecError(() => parseNodeMarkdown('---\nx: &a [1, *a]\n---\n'), /recursive alias/);
    });

    it('keeps timestamps and other scalars as JSON data', () => {
      const { frontmatter } = parseNodeMarkdown(
        '---\ncreated: 2026-01-01T10:00:00Z\nday: 2026-01-01\nn: 0x1F\nf: 1.5e3\nneg: -0\nb: yes\nt: true\nz: ~\ne:\n1: one\nx: &a {k: 1}\ny: *a\n---\n',
      );
      expect(frontmatter).to.deep.equal({
        created: '2026-01-01T10:00:00Z',
        day: '2026-01-01',
        n: 31,
        f: 1500,
        neg: 0,
        b: 'yes',
        t: true,
        z: null,
        e: null,
        '1': 'one',
        x: { k: 1 },
        y: { k: 1 },
      });
      expect(Object.is(frontmatter.neg, 0)).to.equal(true);
      expect(frontmatter.x).to.not.equal(frontmatter.y); // aliases become copies
    });
  });

  describe('serializeNode errors', () => {
    it('rejects values that are not JSON data', () => {
      expectCodecError(() => serializeNode({ d: new Date(0) }, ''), /Date/);
      expectCodecError(() => serializeNode({ n: Number.NaN }, ''), /non-finite/);
      expectCodecError(() => serializeNode({ n: [Infinity] }, ''), /non-finite/);
      expectCodecError(() => serializeNode({ b: 1n }, ''), /bigint/);
      expectCodecError(() => serializeNode({ f: () => 1 }, ''), /function/);
      expectCodecError(() => serializeNode({ m: new Map() }, ''), /Map/);
      const cyc: Frontmatter = { id: 'x' };
      cyc.self = cyc;
      expectCodecError(() => serializeNode(cyc, ''), /circular/);
      expectCodecError(() => serializeNode([] as unknown as Frontmatter, ''), /plain object/);
    });
  });

  describe('serializeNode pair by pair', () => {
    it('writes what one YAML document of the whole frontmatter is, first time and from its table (property)', function () {
      // synchronous CPU work, as below: no wall-clock limit
      this.timeout(0);
      fc.assert(
        fc.property(frontmatterArb, bodyArb, (fm, body) => {
          const whole = `---\n${yamlOf(canonicalFrontmatter(fm))}---\n${normalizeBody(body)}`;
          expect(serializeNode(fm, body)).to.equal(whole);
          // the second time every pair comes from the table
          expect(serializeNode(fm, body)).to.equal(whole);
        }),
        { numRuns: Number(process.env.CODEC_PROPERTY_RUNS ?? 2000) },
      );
      expect(serializeNode({}, '')).to.equal('---\n{}\n---\n');
    });

    it('tells values apart that print alike in JavaScript but not in YAML', () => {
      const text = (v: unknown) => serializeNode({ id: 'x', v } as Frontmatter, '');
      expect(text('1')).to.include('v: "1"');
      expect(text(1)).to.include('v: 1\n');
      expect(text(['a'])).to.not.equal(text('a'));
      expect(text({ a: 1 })).to.not.equal(text([{ a: 1 }]));
      expect(serializeNode({ ['__proto__']: 1, id: 'x' } as Frontmatter, '')).to.include('__proto__: 1');
    });
  });

  describe('parseStoredNode', () => {
    it('falls back to parseNodeMarkdown for files not in the serializer’s shape', () => {
      const crlf = '---\r\nid: a\r\n---\r\nBody\r\n';
      expect(parseStoredNodeFast(crlf)).to.equal(undefined);
      expect(parseStoredNode(crlf)).to.deep.equal({ frontmatter: { id: 'a' }, body: 'Body\r\n' });
      expectCodecError(() => parseStoredNode('---\nid: a\nid: b\n---\n'), /duplicate key/);
      expectCodecError(() => parseStoredNode('no frontmatter'), /no frontmatter/);
    });

    it('equals parseNodeMarkdown on every serializer output (property, 2,000 generated nodes)', function () {
      const numRuns = Number(process.env.CODEC_PROPERTY_RUNS ?? 2000);
      // Synchronous CPU work: mocha cannot cut it short anyway (a timeout is only checked once it
      // returns), and its wall time on a loaded machine says nothing (it took over 100 s beside
      // stress-ng and other suites' jobs). No wall-clock limit.
      this.timeout(0);
      fc.assert(
        fc.property(frontmatterArb, bodyArb, (fm, body) => {
          const text = serializeNode(fm, body);
          const canonical = parseNodeMarkdown(text);
          const fast = parseStoredNodeFast(text);
          expect(fast, 'fast path must accept serializer output').to.not.equal(undefined);
          expect(fast).to.deep.equal(canonical);
          expect(canonical).to.deep.equal({ frontmatter: jsonNormalize(fm), body: normalizeBody(body) });
          expect(serializeNode(canonical.frontmatter, canonical.body)).to.equal(text);
        }),
        { numRuns },
      );
    });
  });

  describe('parseClientMarkdown', () => {
    it('equals parseNodeMarkdown on serializer output and on hand-written variants of it (property)', function () {
      // synchronous CPU work, as above: no wall-clock limit
      this.timeout(0);
      fc.assert(
        fc.property(
          frontmatterArb,
          bodyArb,
          fc.constantFrom('as-is', 'reordered', 'comment', 'crlf', 'single-quoted'),
          (fm, body, variant) => {
            let text = serializeNode(fm, body);
            if (variant === 'reordered') {
              const [head, ...rest] = text.split('\n---\n');
              const lines = head!.split('\n');
              text = [[lines[0], ...lines.slice(1).reverse()].join('\n'), ...rest].join('\n---\n');
            } else if (variant === 'comment') text = text.replace('---\n', '---\n# a comment\n');
            else if (variant === 'crlf') text = text.replace(/\n/g, '\r\n');
            else if (variant === 'single-quoted') text = text.replace(/^id: (.*)$/m, "id: '$1'");
            let canonical: unknown;
            try {
              canonical = parseNodeMarkdown(text);
            } catch (err) {
              expect(() => parseClientMarkdown(text)).to.throw(CodecError);
              return;
            }
            expect(parseClientMarkdown(text)).to.deep.equal(canonical);
          },
        ),
        { numRuns: 500 },
      );
    });
  });
});
