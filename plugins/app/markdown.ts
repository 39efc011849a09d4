/**
 * Node bodies to safe HTML: remark-parse -> remark-rehype -> rehype-sanitize (GitHub's
 * schema: no scripts, no event handlers, no `javascript:` links, no raw HTML kept) ->
 * rehype-stringify. Raw HTML in a body is dropped by remark-rehype (allowDangerousHtml off),
 * and the sanitizer is the second wall.
 */
import type { Link, Root } from 'mdast';
import { findAndReplace } from 'mdast-util-find-and-replace';
import rehypeSanitize from 'rehype-sanitize';
import rehypeStringify from 'rehype-stringify';
import remarkParse from 'remark-parse';
import remarkRehype from 'remark-rehype';
import { unified } from 'unified';

const processor = unified().use(remarkParse).use(remarkRehype).use(rehypeSanitize).use(rehypeStringify).freeze();

export function markdownToSafeHtml(markdown: string): string {
  return String(processor.processSync(markdown));
}

/** Where a mention links: the person's page, with their name as the link's title. */
export interface MentionTarget {
  href: string;
  name: string;
}

/**
 * Markdown with `@handle` mentions as links (a comment, plugins/comments): `pattern` finds them
 * in the text (not in code or inside links), `targets` maps each lowercased handle to the person
 * it resolved to; an unknown handle stays text. The links pass the same sanitizer.
 */
export function markdownWithMentionsToSafeHtml(markdown: string, pattern: RegExp, targets: ReadonlyMap<string, MentionTarget>): string {
  const tree = processor.parse(markdown);
  findAndReplace(
    tree,
    [
      pattern,
      (whole: string, handle: string): Link | false => {
        const target = targets.get(handle.toLowerCase());
        return target ? { type: 'link', url: target.href, title: target.name, children: [{ type: 'text', value: whole }] } : false;
      },
    ],
    { ignore: ['link', 'linkReference'] },
  );
  return processor.stringify(processor.runSync(tree as Root));
}
