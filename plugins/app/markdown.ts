/**
 * Node bodies to safe HTML: remark-parse -> remark-rehype -> rehype-sanitize (GitHub's
 * schema: no scripts, no event handlers, no `javascript:` links, no raw HTML kept) ->
 * rehype-stringify. Raw HTML in a body is dropped by remark-rehype (allowDangerousHtml off),
 * and the sanitizer is the second wall.
 */
import rehypeSanitize from 'rehype-sanitize';
import rehypeStringify from 'rehype-stringify';
import remarkParse from 'remark-parse';
import remarkRehype from 'remark-rehype';
import { unified } from 'unified';

const processor = unified().use(remarkParse).use(remarkRehype).use(rehypeSanitize).use(rehypeStringify).freeze();

export function markdownToSafeHtml(markdown: string): string {
  return String(processor.processSync(markdown));
}
