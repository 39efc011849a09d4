/**
 * Lets the MCP conformance CLI (@modelcontextprotocol/conformance, a single bundle) load on
 * Node 20: the bundle imports `globSync` from 'fs' (Node 22+) for its `tier-check` command only.
 * This module hook gives that one importer a 'fs' with a `globSync` that says so when called;
 * the server scenarios never call it. Used as `node --import ./conformance-node20.mjs`.
 */
import { register } from 'node:module';

const fsWithGlob =
  "import fs from 'node:fs'; export * from 'node:fs'; export default fs;" +
  "export const globSync = fs.globSync ?? (() => { throw new Error('globSync needs Node 22 (conformance tier-check)'); });";

register(
  'data:text/javascript,' +
    encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL && context.parentURL.includes('/@modelcontextprotocol/conformance/dist/')) {
    return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(fsWithGlob)}), shortCircuit: true };
  }
  return next(specifier, context);
}`),
);
