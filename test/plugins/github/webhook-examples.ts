/**
 * GitHub's own webhook payloads for the github plugin's tests: the examples published in
 * `@octokit/webhooks-examples` (api.github.com), signed with `@octokit/webhooks-methods`
 * `sign` exactly as GitHub signs (X-Hub-Signature-256), and delivered to the real server.
 *
 * The published examples have no `issues` `closed` delivery: `closedExample` is the published
 * `reopened` one with the fields a close changes (action, state, state_reason, closed_at), and
 * is checked against GitHub's own schema of `issues.closed` (the `x-webhooks` of the OpenAPI
 * description in `@octokit/openapi`) before use, so it is a payload GitHub's description admits.
 */
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { sign } from '@octokit/webhooks-methods';
import type { TestServer } from '../../helpers/harness.js';

const require = createRequire(import.meta.url);

interface Definition {
  name: string;
  examples: Array<Record<string, unknown>>;
}

let definitions: Definition[] | null = null;

function all(): Definition[] {
  definitions ??= JSON.parse(readFileSync(require.resolve('@octokit/webhooks-examples/api.github.com/index.json'), 'utf8')) as Definition[];
  return definitions;
}

/** The `nth` published example of `event` with `action` (a deep copy). */
export function example(event: string, action: string | null, nth = 0): Record<string, any> {
  const def = all().find((d) => d.name === event);
  const list = (def?.examples ?? []).filter((e) => (action === null ? e.action === undefined : e.action === action));
  const found = list[nth];
  if (!found) throw new Error(`no published example ${event}.${action ?? ''} #${nth}`);
  return structuredClone(found) as Record<string, any>;
}

let openapi: Record<string, any> | null = null;

/** OpenAPI 3.0's `nullable` without a `type` as JSON Schema (anyOf with null), for ajv. */
function asJsonSchema(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(asJsonSchema);
  if (!x || typeof x !== 'object') return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) out[k] = asJsonSchema(v);
  if (out.nullable === true && out.type === undefined) {
    delete out.nullable;
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

/** Whether `payload` is a delivery GitHub's description admits for `event-action`; the errors when not. */
export function checkAgainstGithubSchema(key: string, payload: unknown): string | null {
  openapi ??= JSON.parse(readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.deref.json'), 'utf8')) as Record<
    string,
    any
  >;
  const schema = openapi['x-webhooks'][key]?.post?.requestBody?.content?.['application/json']?.schema;
  if (!schema) return `no schema for ${key}`;
  const validate = new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile(asJsonSchema(schema) as object);
  return validate(payload) ? null : JSON.stringify(validate.errors?.slice(0, 5));
}

/** `issues.closed`: the published `reopened` example as a close leaves it, held to GitHub's schema. */
export function closedExample(stateReason: 'completed' | 'not_planned' = 'completed'): Record<string, any> {
  const payload = example('issues', 'reopened');
  payload.action = 'closed';
  payload.issue.state = 'closed';
  payload.issue.state_reason = stateReason;
  payload.issue.closed_at = payload.issue.updated_at;
  const problem = checkAgainstGithubSchema('issues-closed', payload);
  if (problem) throw new Error(`the adapted issues.closed payload is not one GitHub describes: ${problem}`);
  return payload;
}

export interface Delivery {
  event: string;
  payload: unknown;
  secret: string;
  /** X-GitHub-Delivery (default: a new UUID, as GitHub sends) */
  delivery?: string;
  /** the X-Hub-Signature-256 to send instead of the right one; null: none */
  signature?: string | null;
  org?: string;
}

/** POSTs a delivery as GitHub does: JSON body, event, delivery id and signature headers. */
export async function deliver(t: TestServer, d: Delivery) {
  const body = JSON.stringify(d.payload);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/test',
    'x-github-event': d.event,
    'x-github-delivery': d.delivery ?? randomUUID(),
    'x-github-hook-id': '1',
  };
  const signature = d.signature === undefined ? await sign(d.secret, body) : d.signature;
  if (signature !== null) headers['x-hub-signature-256'] = signature;
  const res = await t.api('POST', `/v1/integrations/github/webhook?tenant=${d.org ?? t.org}`, { token: null, rawBody: body, headers });
  return { ...res, delivery: headers['x-github-delivery']! };
}
