/**
 * The mention rule (plugins/comments/mentions.ts, docs/decisions.md "Comments with mentions"):
 * which `@words` are mentions, and which person each names, against a real tenant's people.
 */
import { expect } from 'chai';
import { directory, mentionHandles, resolveMentions, MAX_MENTIONS } from '../../../plugins/comments/mentions.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';

describe('comments: the mention rule', function () {
  this.timeout(30_000);
  let t: TestServer;
  const people: Record<string, string> = {};
  const tenant = () => t.server.services.tenants.get(t.org)!;

  before(async () => {
    t = await startTestServer();
    for (const name of ['Ada Lovelace', 'Ada Byron', 'Grace Hopper', 'José Núñez', 'Lin']) people[name] = (await addPerson(t, name)).id;
  });
  after(async () => t?.close());

  it('finds @handles in text only: not in code, links or email addresses; a trailing dot is punctuation', () => {
    const md = [
      'Hi @grace. And @josé-núñez, see `@ada` and',
      '```',
      '@lin in a block',
      '```',
      '[@lin](https://example.test/@lin) mail grace@example.test or a/@path, @@double',
      '- @Lin in a list, **@grace.hopper** in bold, @Grace again',
    ].join('\n');
    expect(mentionHandles(md)).to.deep.equal(['grace', 'josé-núñez', 'Lin', 'grace.hopper']);
  });

  it('resolves by id, email local part, folded full name, unique first name; ambiguity and strangers stay text', () => {
    const { mentions, unresolved } = resolveMentions(
      tenant(),
      `@${people['Lin']} @ada.lovelace @adabyron @JoseNunez @grace @ada @nobody @Grace-Hopper`,
    );
    expect(mentions.map((m) => [m.name, m.handles])).to.deep.equal([
      ['Lin', [people['Lin']]],
      ['Ada Lovelace', ['ada.lovelace']],
      ['Ada Byron', ['adabyron']],
      ['José Núñez', ['JoseNunez']],
      ['Grace Hopper', ['grace', 'Grace-Hopper']],
    ]);
    // two Adas share the first name: @ada names nobody
    expect(unresolved).to.deep.equal(['ada', 'nobody']);
  });

  it(`looks at most ${MAX_MENTIONS} distinct handles`, () => {
    const many = Array.from({ length: MAX_MENTIONS + 5 }, (_, i) => `@someone${i}`).join(' ') + ' @grace';
    const { mentions, unresolved } = resolveMentions(tenant(), many, directory(tenant()));
    expect(unresolved).to.have.length(MAX_MENTIONS);
    expect(mentions).to.deep.equal([]);
  });
});
