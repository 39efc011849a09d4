/**
 * Shared by the tests of code moving work (pull requests, reviews, pushes): GitHub's own
 * published webhook payloads (`@octokit/webhooks-examples`), adapted only where a test needs it
 * (the PR body, commit messages, merged, the review state), signed with
 * `@octokit/webhooks-methods` as GitHub signs them, and posted to the real webhook route.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { sign } from '@octokit/webhooks-methods';
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';
import { storesOf } from '../../../plugins/github/store.js';

interface ExampleGroup {
  name: string;
  examples: Array<Record<string, unknown>>;
}

const require = createRequire(import.meta.url);
const groups = require('@octokit/webhooks-examples') as ExampleGroup[];

/** A deep copy of GitHub's first published example of `event` (with `action`, when given) that `pick` accepts. */
export function example(
  event: string,
  action?: string,
  pick: (p: Record<string, unknown>) => boolean = () => true,
): Record<string, unknown> {
  const group = groups.find((g) => g.name === event);
  const found = group?.examples.find((e) => (action === undefined || e.action === action) && pick(e));
  if (!found) throw new Error(`no published example of ${event}${action ? `.${action}` : ''}`);
  return structuredClone(found);
}

/** The object at `key` of a payload (examples are JSON objects all the way down). */
export function at(payload: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = payload[key];
  if (!v || typeof v !== 'object') throw new Error(`example has no object ${key}`);
  return v as Record<string, unknown>;
}

export const REPO = 'Codertocat/Hello-World';
export const SECRET = 'test-webhook-secret-for-code-moves';

/** Links the examples' repository with a token and a known secret; `people` maps GitHub logins to person ids. */
export async function linkRepo(t: TestServer, people: Record<string, string> = {}, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.api('POST', '/v1/integrations/github/links', {
    body: {
      repo: REPO,
      first_sync: false,
      token: 'github_pat_11TESTTOKENFORCODEMOVES',
      webhook_secret: SECRET,
      mappings: { people },
      ...extra,
    },
  });
  expect(res.status, res.text).to.equal(201);
  return res.body.link.id as string;
}

/** Posts a signed delivery to the webhook route and waits until the worker has handled it. */
export async function deliver(t: TestServer, event: string, payload: unknown, opts: { secret?: string; id?: string } = {}) {
  const body = JSON.stringify(payload);
  const id = opts.id ?? randomUUID();
  const res = await t.api('POST', `/v1/integrations/github/webhook?tenant=${t.org}`, {
    token: null,
    rawBody: body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': id,
      'x-hub-signature-256': await sign(opts.secret ?? SECRET, body),
    },
  });
  if (res.status === 202) {
    const stores = storesOf(t.server.services.tenants.get(t.org)!);
    const state = await until(
      () => {
        const d = stores.inbound.get(id);
        // a failed attempt waits for its retry: report it now rather than time out
        return d && (d.state !== 'queued' || d.attempts > 0) ? d.state : undefined;
      },
      `delivery ${id} handled`,
      20_000,
    );
    expect(state, stores.inbound.get(id)?.last_error ?? '').to.equal('done');
  }
  return { res, id };
}

/** A node as GET /v1/nodes/{id} answers it. */
export async function node(t: TestServer, id: string) {
  const res = await t.api('GET', `/v1/nodes/${id}`);
  expect(res.status, res.text).to.equal(200);
  return res.body as { frontmatter: Record<string, unknown> & { status: string; edges?: Array<Record<string, string>> }; revision: string };
}
