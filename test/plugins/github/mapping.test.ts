/**
 * The pure parts of the mapping and of the sync's common form (plugins/github/mapping.ts,
 * plugins/github/sync.ts): labels to type and priority over the defaults and an admin's maps;
 * a published issue read into the synced form; bodies past the node limit cut with a link to
 * the issue, on a character boundary; long texts split into comment-sized pieces, none lost.
 */
import { expect } from 'chai';
import { pieces } from '../../../plugins/github/conflict.js';
import { DEFAULT_MAPPINGS, priorityOfLabels, typeOfLabels, withDefaults } from '../../../plugins/github/mapping.js';
import { cutToBytes, issueSnapshot, nodeBodyOf, normalizeText, readIssue } from '../../../plugins/github/sync.js';
import { LIMITS } from '../../../kernel/registry.js';
import { example } from './webhook-examples.js';

describe('github: mappings and the synced form', () => {
  it('labels give the type (first that maps, else the default) and the highest priority, case-insensitively', () => {
    const m = DEFAULT_MAPPINGS;
    expect(typeOfLabels(m, ['docs', 'Bug'])).to.equal('issue');
    expect(typeOfLabels(m, ['enhancement', 'bug'])).to.equal('task');
    expect(typeOfLabels(m, ['docs'])).to.equal('issue');
    expect(priorityOfLabels(m, ['Priority: Low', 'P1'])).to.equal('p1');
    expect(priorityOfLabels(m, ['priority/medium'])).to.equal('p2');
    expect(priorityOfLabels(m, ['docs'])).to.equal(null);
    const custom = withDefaults({ label_types: { Epic: 'task' }, label_priorities: { 'SEV-1': 'p1' }, default_type: 'task' });
    expect(typeOfLabels(custom, ['epic'])).to.equal('task');
    expect(typeOfLabels(custom, ['bug']), 'defaults kept under the given map').to.equal('issue');
    expect(typeOfLabels(custom, ['docs'])).to.equal('task');
    expect(priorityOfLabels(custom, ['sev-1'])).to.equal('p1');
  });

  it("reads a published issue into the synced form (labels sorted, logins lower-case, body's line ends normalized)", () => {
    const payload = example('issues', 'opened');
    const issue = readIssue(payload.issue);
    expect(issue).to.not.equal(null);
    const snap = issueSnapshot(issue!);
    expect(snap).to.deep.equal({
      title: payload.issue.title,
      body: normalizeText(payload.issue.body),
      state: 'open',
      labels: ['bug'],
      assignees: ['codertocat'],
      body_truncated: false,
    });
    expect(readIssue({ number: 1 })).to.equal(null);
    expect(normalizeText('a\r\nb\rc  \n\n')).to.equal('a\nb\nc');
  });

  it('a body past the node limit is cut on a character boundary, with a link to the issue', () => {
    const url = 'https://github.com/acme/web/issues/7';
    const long = 'é'.repeat(LIMITS.bodyBytes);
    const cut = nodeBodyOf(long, url);
    expect(cut.truncated).to.equal(true);
    expect(Buffer.byteLength(cut.body)).to.be.at.most(LIMITS.bodyBytes);
    expect(cut.body).to.not.include('\uFFFD');
    expect(cut.body.endsWith(`[... the rest is on GitHub: ${url}]`)).to.equal(true);
    expect(nodeBodyOf('short', url)).to.deep.equal({ body: 'short', truncated: false });
    expect(nodeBodyOf(null, url)).to.deep.equal({ body: '', truncated: false });
    expect(cutToBytes('aé', 2)).to.equal('a');
  });

  it('a long text is split into comment-sized pieces that join back to the whole', () => {
    const text = Array.from({ length: 3000 }, (_, i) => `line ${i} ü`).join('\n');
    const parts = pieces(text, 4000);
    expect(parts.length).to.be.above(1);
    for (const p of parts) expect(Buffer.byteLength(p)).to.be.at.most(4000);
    expect(parts.join('')).to.equal(text);
  });
});
