/**
 * `@name` mentions in a comment's markdown: which words are mentions, and which person each
 * one names (docs/decisions.md "Comments"). Mentions are read from the markdown's text only (a
 * `@word` in inline code, a code block or a link's address is not one), with the pattern the
 * web app also uses to link them (public.ts).
 */
import type { Root, RootContent } from 'mdast';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import type { Tenant } from '../../kernel/tenant.js';

/**
 * `@` and a handle of letters, digits and inner `.`, `_`, `-` (a trailing `.` is the sentence's);
 * not after a letter, digit or one of `@./-`, so an email address (`ada@example.com`) is no mention.
 */
export const MENTION_SOURCE = '(?<![\\p{L}\\p{N}_@./-])@([\\p{L}\\p{N}](?:[\\p{L}\\p{N}._-]*[\\p{L}\\p{N}])?)';

/** A fresh global matcher (a `g` regex keeps state between calls). */
export const mentionPattern = (): RegExp => new RegExp(MENTION_SOURCE, 'gu');

/** Distinct handles a comment names this many times at most are resolved; the rest stay text. */
export const MAX_MENTIONS = 20;

export interface Mention {
  person: string;
  name: string;
  /** the handles, as written without the `@`, that name this person in the markdown */
  handles: string[];
}

const parser = unified().use(remarkParse).freeze();

/** The `@handles` of the markdown's plain text, distinct (case-insensitively), in order of appearance. */
export function mentionHandles(markdown: string): string[] {
  const tree = parser.parse(markdown) as Root;
  const seen = new Map<string, string>();
  const walk = (node: Root | RootContent): void => {
    if (node.type === 'text') {
      for (const m of node.value.matchAll(mentionPattern())) {
        const key = m[1]!.toLowerCase();
        if (!seen.has(key)) seen.set(key, m[1]!);
      }
      return;
    }
    // a link's text is the link's, and code is code: neither mentions anyone
    if (node.type === 'link' || node.type === 'linkReference') return;
    if ('children' in node) for (const child of node.children) walk(child);
  };
  walk(tree);
  return [...seen.values()];
}

/** Lowercase letters and digits only, accents dropped: `Zoë O'Brien` and `@zoe.obrien` meet as `zoeobrien`. */
export function fold(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

/** The tenant's people by each key a handle may match (`directory`). */
export type PeopleDirectory = Array<Map<string, Set<string>>>;

/**
 * The tenant's people by each key a handle may match, strongest first: the person id, the local
 * part of the email (`ada.lovelace` of ada.lovelace@example.com), the whole name folded
 * (`adalovelace`, `ada-lovelace`), the first name folded (`ada`). O(people): built once per request.
 */
export function directory(tenant: Tenant): PeopleDirectory {
  const levels: PeopleDirectory = [new Map(), new Map(), new Map(), new Map()];
  const add = (level: number, key: string, id: string) => {
    if (!key) return;
    const map = levels[level]!;
    let ids = map.get(key);
    if (!ids) map.set(key, (ids = new Set()));
    ids.add(id);
  };
  for (const id of tenant.index.idsOfType('person')) {
    const fm = tenant.index.get(id)?.frontmatter;
    if (!fm) continue;
    add(0, id.toLowerCase(), id);
    const email = typeof fm.email === 'string' ? fm.email : '';
    if (email.includes('@')) add(1, email.slice(0, email.lastIndexOf('@')).toLowerCase(), id);
    const name = typeof fm.name === 'string' ? fm.name.trim() : '';
    add(2, fold(name), id);
    add(3, fold(name.split(/\s+/)[0] ?? ''), id);
  }
  return levels;
}

/** The person a handle names: the first key level with a match decides, and two people there leave it unresolved. */
function lookup(levels: PeopleDirectory, handle: string): string | null {
  const keys = [handle.toLowerCase(), handle.toLowerCase(), fold(handle), fold(handle)];
  for (const [i, map] of levels.entries()) {
    const ids = map.get(keys[i]!);
    if (ids && ids.size > 0) return ids.size === 1 ? [...ids][0]! : null;
  }
  return null;
}

/**
 * The people the markdown mentions, in order of first mention, one entry per person with every
 * handle that named them, and the handles that name nobody (or several people): those stay plain
 * text. At most `MAX_MENTIONS` distinct handles are looked at.
 */
export function resolveMentions(
  tenant: Tenant,
  markdown: string,
  people: PeopleDirectory = directory(tenant),
): { mentions: Mention[]; unresolved: string[] } {
  const handles = mentionHandles(markdown).slice(0, MAX_MENTIONS);
  const byPerson = new Map<string, Mention>();
  const unresolved: string[] = [];
  for (const handle of handles) {
    const person = lookup(people, handle);
    if (!person) {
      unresolved.push(handle);
      continue;
    }
    const found = byPerson.get(person);
    if (found) found.handles.push(handle);
    else {
      const fm = tenant.index.get(person)?.frontmatter;
      byPerson.set(person, { person, name: typeof fm?.name === 'string' && fm.name ? fm.name : person, handles: [handle] });
    }
  }
  return { mentions: [...byPerson.values()], unresolved };
}
