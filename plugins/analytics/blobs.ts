/**
 * Historical node blobs for the timeline rebuild: every oid streams through one
 * `git cat-file --batch --buffer` (packed or loose alike, about 0.4 s per 10,000 blobs),
 * and each blob is handed to the caller as it arrives, so the whole history is never held
 * in memory at once. Used only when a tenant opens, never per request.
 */
export { streamBlobs } from '../../kernel/git/cli.js';
