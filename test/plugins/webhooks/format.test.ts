/**
 * The parts of a delivery that need no server: the retry schedule (full jitter under an
 * exponential ceiling, at least a day of retries before the disable), the body size cap, the
 * Slack line, and signatures the `standardwebhooks` verifier accepts.
 */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import type { WorkEvent } from '../../../kernel/events/types.js';
import { backoffMs, DISABLE_AFTER_MS, RETRY_BASE_MS, RETRY_CAP_MS } from '../../../plugins/webhooks/engine.js';
import { BODY_MAX_BYTES, jsonBody, messageIdOf, signature, signedHeaders, slackBody } from '../../../plugins/webhooks/format.js';
import { newSecret, type StoredWebhook } from '../../../plugins/webhooks/store.js';

const event = (payload: Record<string, unknown>, over: Partial<WorkEvent> = {}): WorkEvent => ({
  id: 42,
  type: 'node.status_changed',
  time: '2026-11-26T06:00:00.000Z',
  org: 'acme',
  actor: { person: 'person-ada', agent: null, name: 'Ada <Lovelace>', via: 'rest' },
  nodes: ['task-fix-login'],
  project: 'proj-web',
  payload,
  ...over,
});

describe('webhooks: schedule, bodies and signatures', () => {
  it('backoff: full jitter under min(1 h, 5 s x 2^n); the ceiling keeps retrying past a day', () => {
    expect(backoffMs(1, () => 0)).to.equal(0);
    expect(backoffMs(1, () => 0.999999))
      .to.be.below(2 * RETRY_BASE_MS)
      .and.at.least(2 * RETRY_BASE_MS - 1);
    expect(backoffMs(3, () => 0.5)).to.equal(Math.floor(0.5 * 8 * RETRY_BASE_MS));
    expect(backoffMs(40, () => 0.999999)).to.be.below(RETRY_CAP_MS);
    // the longest possible schedule still fits many attempts into the day before the disable
    let waited = 0;
    let attempts = 0;
    while (waited < DISABLE_AFTER_MS) waited += backoffMs(++attempts, () => 0.999999);
    expect(attempts).to.be.at.least(30);
  });

  it('the body is {type, timestamp, data}; an event over 256 KiB goes out with its payload replaced by a note', () => {
    const small = JSON.parse(jsonBody(event({ from: 'open', to: 'done' })));
    expect(small).to.deep.include({ type: 'node.status_changed', timestamp: '2026-11-26T06:00:00.000Z' });
    expect(small.data.payload).to.deep.equal({ from: 'open', to: 'done' });
    const big = jsonBody(event({ blob: 'x'.repeat(BODY_MAX_BYTES) }));
    expect(Buffer.byteLength(big)).to.be.at.most(BODY_MAX_BYTES);
    const parsed = JSON.parse(big);
    expect(parsed.data.payload).to.include({ truncated: true, link: '/v1/nodes/task-fix-login' });
    expect(parsed.data.payload.original_bytes).to.be.above(BODY_MAX_BYTES);
    expect(parsed.data.id).to.equal(42);
  });

  it("slack: who did what to which node, linked, with Slack's escapes", () => {
    const text = JSON.parse(slackBody(event({ title: 'Fix <login> & co', from: 'open', to: 'done' }), 'https://wg.example.com/')).text;
    expect(text).to.equal(
      'Ada &lt;Lovelace&gt; changed the status of <https://wg.example.com/app/nodes/task-fix-login|task-fix-login> "Fix &lt;login&gt; &amp; co", open → done in proj-web',
    );
    const system = JSON.parse(slackBody(event({}, { actor: null, type: 'lease.expired' }), undefined)).text;
    expect(system).to.equal('The server lost the lease on task-fix-login in proj-web');
  });

  it('signatures verify with the standardwebhooks verifier; during a rotation with either secret', () => {
    const secret = newSecret();
    const previous = newSecret();
    const hook = { secret, previous_secret: previous, previous_until: new Date(Date.now() + 60_000).toISOString() } as StoredWebhook;
    const e = event({});
    const body = jsonBody(e);
    const headers = signedHeaders(hook, messageIdOf(e), new Date(), body);
    expect(headers['webhook-id']).to.equal('evt_acme_42');
    expect(headers['webhook-signature']!.split(' ')).to.have.length(2);
    expect(new Webhook(secret).verify(body, headers)).to.deep.equal(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).to.deep.equal(JSON.parse(body));
    expect(() => new Webhook(newSecret()).verify(body, headers)).to.throw();
    expect(() => new Webhook(secret).verify(body.replace('42', '43'), headers)).to.throw();
    // after the overlap only the new secret signs
    const after = signedHeaders({ ...hook, previous_until: new Date(Date.now() - 1).toISOString() }, 'evt_acme_42', new Date(), body);
    expect(after['webhook-signature']!.split(' ')).to.have.length(1);
    expect(() => new Webhook(previous).verify(body, after)).to.throw();
  });

  it("the signature is byte for byte the standardwebhooks package's own sign(), for any body and time", () => {
    for (let i = 0; i < 200; i++) {
      const secret = newSecret();
      const at = new Date(1_700_000_000_000 + Math.floor(Math.random() * 1e11));
      // unicode, quotes, newlines and empty bodies included
      const body = i % 7 === 0 ? '' : JSON.stringify({ i, text: 'é✓"\n'.repeat(i % 13), n: Math.random() });
      const id = `evt_acme_${i}`;
      expect(signature(secret, id, at, body)).to.equal(new Webhook(secret).sign(id, at, body));
    }
  });
});
