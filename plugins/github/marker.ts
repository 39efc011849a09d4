/**
 * The marker the outbound side writes into what it creates on GitHub (an issue's body, a
 * comment's), `<!-- work-graph:<id> -->`: an HTML comment GitHub does not show. After a crash
 * between GitHub's answer and the durable record of it, the next attempt finds the issue or
 * comment by its marker instead of creating it again (outbound-push.ts). Both sides read bodies
 * without it (sync.ts `issueSnapshot`), so it is never a change.
 */

/** The marker of a node or comment id. */
export function markerOf(id: string): string {
  return `<!-- work-graph:${id} -->`;
}

const MARKER_LINE = /\n*<!-- work-graph:[^>\s]+ -->[ \t]*(?=\n|$)/g;

/** `text` without the markers this server wrote (and the blank lines before them). */
export function stripMarkers(text: string | null | undefined): string | null {
  if (text === null || text === undefined) return null;
  return text.replace(MARKER_LINE, '');
}

/** `text` with the marker of `id` on its own last line. */
export function withMarker(text: string, id: string): string {
  return `${text.trimEnd()}\n\n${markerOf(id)}`;
}

const MARKER_ID = /<!-- work-graph:([a-z0-9][a-z0-9-]*) -->/;

/** The id the first marker in `text` names, if any (whether it is this tenant's is the caller's check). */
export function markedId(text: string | null | undefined): string | undefined {
  return text ? MARKER_ID.exec(text)?.[1] : undefined;
}
