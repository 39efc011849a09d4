/**
 * Server-made node ids: the type prefix plus a kebab slug of a line of text (at most 60
 * characters), with a numeric suffix when the id is taken (docs/design.md §6).
 */
import { createHash } from 'node:crypto';

export const SLUG_MAX = 60;

/** Kebab slug of free text: accents folded, anything else non-alphanumeric becomes one dash. */
export function slugOf(text: string, max = SLUG_MAX): string {
  const folded = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const cut = folded.slice(0, max).replace(/-+$/g, '');
  // Text with no latin letters or digits (e.g. only CJK) still needs a stable, readable-enough id.
  return cut || createHash('sha1').update(text).digest('hex').slice(0, 10);
}

/** `prefix + slug`, or `prefix + slug + -N` (N = 2, 3, ...) for the first free one. */
export function uniqueId(prefix: string, slug: string, taken: (id: string) => boolean): string {
  const base = `${prefix}${slug}`;
  if (!taken(base)) return base;
  for (let n = 2; ; n++) {
    const id = `${base}-${n}`;
    if (!taken(id)) return id;
  }
}
