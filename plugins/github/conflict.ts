/**
 * What a conflict leaves behind on the node side (docs/github.md "Loops and conflicts"): a
 * GitHub change that met a node change made since the last sync is not applied over it; it is
 * kept as a comment on the node (plugins/comments, through its api.ts) holding both texts, by
 * the person the GitHub login maps to (else the link's bot person). A comment holds at most
 * the node body limit (8 KB): longer texts are kept in several comments, in order, never cut.
 */
import { invoke } from '../../kernel/operation.js';
import { LIMITS } from '../../kernel/registry.js';
import { addComment } from '../comments/api.js';
import type { InboundContext } from './handlers/index.js';
import type { GithubIssue } from './sync.js';

/** Whether the tenant has comments (an optional dependency: without it nothing is posted). */
export function commentsUsable(ctx: InboundContext): boolean {
  return ctx.tenant.enabled('comments');
}

/** `text` in pieces of at most `limit` UTF-8 bytes, cut on line ends where one is near. */
export function pieces(text: string, limit: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (Buffer.byteLength(rest) > limit) {
    let cut = Buffer.from(rest).subarray(0, limit).toString('utf8');
    while (cut.endsWith('\uFFFD') || Buffer.byteLength(cut) > limit) cut = cut.slice(0, -1);
    const newline = cut.lastIndexOf('\n');
    if (newline > cut.length / 2) cut = cut.slice(0, newline + 1);
    out.push(cut);
    rest = rest.slice(cut.length);
  }
  out.push(rest);
  return out;
}

/** Posts `text` as one comment or, past the limit, several (each saying which part it is). Returns false without comments. */
export async function noteOnNode(ctx: InboundContext, node: string, login: string | null, text: string): Promise<boolean> {
  if (!commentsUsable(ctx)) return false;
  const writer = ctx.as(login);
  // room for the "(part i of n)" line
  const parts = pieces(text, LIMITS.bodyBytes - 40);
  for (const [i, part] of parts.entries()) {
    const body = parts.length > 1 ? `(part ${i + 1} of ${parts.length})\n\n${part}` : part;
    const answer: unknown = await invoke(addComment, writer, { id: node, body });
    if (typeof answer === 'object' && answer !== null && 'id' in answer && typeof answer.id === 'string')
      await pairLocal(ctx, node, answer.id);
  }
  return true;
}

/**
 * Records a comment this side wrote for GitHub's sake (a conflict note, the later parts of a
 * long GitHub comment) in the sync record's `comments` under `local:<id>`, so the outbound side
 * (outbound.ts), which sends a node's comments that are not paired, does not post it back.
 */
export async function pairLocal(ctx: InboundContext, node: string, commentId: string): Promise<void> {
  const record = ctx.stores.sync.get(node);
  if (record) await ctx.stores.sync.set(node, { ...record, comments: { ...(record.comments ?? {}), [`local:${commentId}`]: commentId } });
}

const fence = (text: string): string => {
  // a fence longer than any run of backticks in the text, so the text shows verbatim
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const f = '`'.repeat(longest + 1);
  return `${f}text\n${text}\n${f}`;
};

/** Keeps a GitHub change that was not applied (the node moved too) as a comment with both texts. */
export async function keepConflict(
  ctx: InboundContext,
  node: string,
  login: string | null,
  issue: GithubIssue,
  k: { field: string; github: string; here: string },
): Promise<boolean> {
  const text =
    `GitHub change to **${k.field}** not applied: this node changed too since the last sync ` +
    `(${ctx.link.repo}#${issue.number}, ${issue.html_url}). This node's value is kept and goes to GitHub; ` +
    `GitHub's${login ? ` (by @${login})` : ''} was:\n\n${fence(k.github)}\n\nThis node's:\n\n${fence(k.here)}`;
  return noteOnNode(ctx, node, login, text);
}
