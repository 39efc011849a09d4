/**
 * References to nodes in pull request titles and bodies and in commit messages, the way GitHub
 * reads `Fixes #12`: a keyword, an optional colon, then one node id or a list of them
 * (`Fixes task-a, task-b and task-c`). Closing keywords (close, fix, resolve and their -s / -d
 * forms) finish the node when the change lands; referencing ones (`Refs`, `Ref`, `References`,
 * `Part of`, `Related to`) only link it. Keywords match in any case; ids are this server's ids
 * (kebab-case with a type prefix, kernel/registry.ts `patterns.id`), read in any case and
 * answered in lower case. Whether an id names an existing node is the caller's question: an
 * unknown id is dropped there, never an error.
 */

export type RefKind = 'closes' | 'refs';

export interface NodeRef {
  /** the node id, lower case */
  id: string;
  /** `closes`: the change finishes the node when it lands; `refs`: it only links it */
  kind: RefKind;
}

const CLOSING = ['close', 'closes', 'closed', 'fix', 'fixes', 'fixed', 'resolve', 'resolves', 'resolved'];
const REFERENCING = ['ref', 'refs', 'references', 'part\\s+of', 'related\\s+to'];

/**
 * An id as a reference names it: a type prefix and at least one more kebab segment (a bare word
 * after a keyword, "fixes the login", is prose, not an id), optionally in backticks. A character
 * that would continue a path, an issue number or an address (`/`, `#`, `@`) after it means it
 * was not an id (`Fixes owner/repo#12`).
 */
const ID = '`?([a-z0-9]+(?:-[a-z0-9]+)+)`?(?![a-z0-9_/#@-])';
const LIST_SEPARATOR = '\\s*(?:,\\s*(?:and\\s+|&\\s*)?|\\s(?:and|&)\\s+)\\s*';

const KEYWORD = `(?<![a-z0-9_-])(${[...CLOSING, ...REFERENCING].join('|')})\\s*:?\\s+`;
const REFERENCE = new RegExp(`${KEYWORD}(${ID}(?:${LIST_SEPARATOR}${ID})*)`, 'gi');
const ONE_ID = new RegExp(ID, 'gi');
const CLOSING_WORD = new RegExp(`^(?:${CLOSING.join('|')})$`, 'i');

/** The longest id the server accepts (kernel/operation.ts `NodeId`). */
const MAX_ID_LENGTH = 200;

/**
 * The node references in `text`, in order of first mention, one per id. An id named by both a
 * closing and a referencing keyword is a closing reference (the stronger statement wins).
 */
export function findRefs(text: string | null | undefined): NodeRef[] {
  if (!text) return [];
  const found = new Map<string, RefKind>();
  for (const match of text.matchAll(REFERENCE)) {
    const keyword = match[1] ?? '';
    const kind: RefKind = CLOSING_WORD.test(keyword) ? 'closes' : 'refs';
    for (const idMatch of (match[2] ?? '').matchAll(ONE_ID)) {
      const id = (idMatch[1] ?? '').toLowerCase();
      if (id.length === 0 || id.length > MAX_ID_LENGTH) continue;
      if (found.get(id) !== 'closes') found.set(id, kind);
    }
  }
  return [...found].map(([id, kind]) => ({ id, kind }));
}

/** The references of several texts together (a pull request's title and body), merged as `findRefs` merges one text's. */
export function findRefsIn(...texts: Array<string | null | undefined>): NodeRef[] {
  return findRefs(texts.filter((t): t is string => typeof t === 'string' && t.length > 0).join('\n'));
}
