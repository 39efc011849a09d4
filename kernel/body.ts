/**
 * Request body reading with the 1 MB limit enforced both from Content-Length and while
 * streaming (chunked uploads), then JSON parsing. Over the limit is 413 `too_large`.
 */
import type { IncomingMessage } from 'node:http';
import { errors } from './errors.js';
import { LIMITS } from './registry.js';

export async function readRawBody(req: IncomingMessage, limit = LIMITS.requestBytes): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw errors.tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.resume();
      throw errors.tooLarge(limit);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function parseJsonBody(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw errors.validation('request body is not valid JSON', [{ field: 'body', message: (err as Error).message }]);
  }
}
