/**
 * Every declared operation's input and output schema is a valid JSON Schema. The kernel's own
 * validator compiles these without checking them against the meta-schema (kernel/operation.ts:
 * that check compiled the meta-schema on a server's first request); this is where it happens.
 */
import { Ajv } from 'ajv';
import { expect } from 'chai';
import { declaredOperations } from '../../kernel/plugin.js';
import { allPlugins } from '../../scripts/plugins.js';

describe('operation schemas', () => {
  it('every input and output schema of every plugin passes the JSON Schema meta-schema and compiles', () => {
    // formats are the kernel validator's business (it ignores them); not checked here, and not warned about
    const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
    let checked = 0;
    for (const plugin of allPlugins) {
      for (const op of declaredOperations(plugin)) {
        for (const [side, schema] of [
          ['input', op.input],
          ['output', op.output],
        ] as const) {
          if (!schema) continue;
          expect(ajv.validateSchema(schema), `${plugin.name}.${op.name} ${side}: ${ajv.errorsText(ajv.errors)}`).to.equal(true);
          ajv.compile(schema);
          checked++;
        }
      }
    }
    expect(checked).to.be.greaterThan(100);
  });
});
