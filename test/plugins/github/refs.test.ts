/**
 * Reading node references out of pull request texts and commit messages (plugins/github/refs.ts):
 * closing and referencing keywords in any case, lists, ids in this server's format only.
 */
import { expect } from 'chai';
import { findRefs, findRefsIn } from '../../../plugins/github/refs.js';

describe('github: references in pull requests and commits', () => {
  it('each closing keyword, in any case and with an optional colon, closes the id after it', () => {
    for (const keyword of ['Fixes', 'fix', 'FIXED', 'Closes', 'close', 'closed', 'Resolves', 'resolve', 'RESOLVED']) {
      expect(findRefs(`${keyword} task-login-bug`), keyword).to.deep.equal([{ id: 'task-login-bug', kind: 'closes' }]);
      expect(findRefs(`${keyword}: task-login-bug`), `${keyword}:`).to.deep.equal([{ id: 'task-login-bug', kind: 'closes' }]);
    }
  });

  it('Refs, Ref, References, Part of and Related to only reference', () => {
    for (const keyword of ['Refs', 'ref', 'REFERENCES', 'Part of', 'part  of', 'Related to']) {
      expect(findRefs(`${keyword} issue-crash-on-start`), keyword).to.deep.equal([{ id: 'issue-crash-on-start', kind: 'refs' }]);
    }
  });

  it('several references in one text, in order, with lists after one keyword', () => {
    const text = 'Rework the login form.\n\nFixes task-a, task-b and task-c\nRefs issue-x & issue-y. Part of `spec-auth`.';
    expect(findRefs(text)).to.deep.equal([
      { id: 'task-a', kind: 'closes' },
      { id: 'task-b', kind: 'closes' },
      { id: 'task-c', kind: 'closes' },
      { id: 'issue-x', kind: 'refs' },
      { id: 'issue-y', kind: 'refs' },
      { id: 'spec-auth', kind: 'refs' },
    ]);
  });

  it('ids are answered in lower case; the same id twice is one reference, and closing beats referencing', () => {
    expect(findRefs('Refs Task-Login. Fixes TASK-LOGIN. refs task-login')).to.deep.equal([{ id: 'task-login', kind: 'closes' }]);
  });

  it('prose, GitHub issue numbers, paths and keywords inside words are not references', () => {
    expect(findRefs('fixes the login bug')).to.deep.equal([]);
    expect(findRefs('Fixes #12 and closes octo/repo#13')).to.deep.equal([]);
    expect(findRefs('Fixes task-a/b and resolves user@task-b')).to.deep.equal([]);
    expect(findRefs('prefixes task-a; suffixed task-b; unresolved task-c')).to.deep.equal([]);
    expect(findRefs('Fixes task-a and updates the docs')).to.deep.equal([{ id: 'task-a', kind: 'closes' }]);
    expect(findRefs('')).to.deep.equal([]);
    expect(findRefs(null)).to.deep.equal([]);
  });

  it('an id longer than the server accepts is dropped', () => {
    expect(findRefs(`Fixes task-${'a'.repeat(200)}`)).to.deep.equal([]);
  });

  it('findRefsIn merges a title and a body', () => {
    expect(findRefsIn('Fix login (refs task-a)', null, 'Closes task-a, task-b')).to.deep.equal([
      { id: 'task-a', kind: 'closes' },
      { id: 'task-b', kind: 'closes' },
    ]);
  });
});
