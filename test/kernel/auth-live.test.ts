/**
 * kernel/auth.ts `isLive`: which stored token records authenticate. A record's `expires` is
 * written by the server (ISO-8601); one that cannot be read (a store edited by hand, a bad
 * restore) fails closed: the token is not live.
 */
import { expect } from 'chai';
import { isLive, newTokenRecord } from '../../kernel/auth.js';

describe('auth: isLive', () => {
  const now = Date.parse('2026-11-28T12:00:00.000Z');
  const record = (expires: string | null, revoked = false) =>
    newTokenRecord(`svc_pat_${'a'.repeat(32)}`, {
      kind: 'pat',
      person: 'person-a',
      created: '2026-11-01T00:00:00.000Z',
      expires,
      revoked_at: revoked ? '2026-11-01T00:00:00.000Z' : null,
    });

  it('a token without expiry is live until revoked', () => {
    expect(isLive(record(null), now)).to.equal(true);
    expect(isLive(record(null, true), now)).to.equal(false);
  });

  it('a token is live strictly before its expiry', () => {
    expect(isLive(record('2026-11-28T12:00:00.001Z'), now)).to.equal(true);
    expect(isLive(record('2026-11-28T12:00:00.000Z'), now)).to.equal(false);
    expect(isLive(record('2026-11-27T00:00:00.000Z'), now)).to.equal(false);
    expect(isLive(record('2027-01-01T00:00:00.000Z', true), now)).to.equal(false);
  });

  it('an expiry that cannot be read fails closed', () => {
    for (const bad of ['never', 'soon', '2026-13-45T99:00:00Z', 'NaN']) expect(isLive(record(bad), now), bad).to.equal(false);
  });

  it('a record changed in place is read again', () => {
    const r = record('2027-01-01T00:00:00.000Z');
    expect(isLive(r, now)).to.equal(true);
    r.expires = '2026-01-01T00:00:00.000Z';
    expect(isLive(r, now)).to.equal(false);
    r.expires = 'garbage';
    expect(isLive(r, now)).to.equal(false);
  });
});
