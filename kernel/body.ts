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

/** The bytes of an over-limit request kept at each end to find its JSON-RPC id and method. */
const EDGE_BYTES = 4096;

/**
 * The /mcp body: whole when within the limit; over it, only its first and last bytes (the rest
 * is drained, so the client gets an answer rather than a reset connection).
 */
export async function readMcpBody(
  req: IncomingMessage,
  limit = LIMITS.requestBytes,
): Promise<{ tooLarge: false; raw: Buffer } | { tooLarge: true; head: string; tail: string }> {
  const declared = Number(req.headers['content-length']);
  let over = Number.isFinite(declared) && declared > limit;
  const chunks: Buffer[] = [];
  let head: Buffer | null = null;
  let tail = Buffer.alloc(0);
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (!over && size > limit) over = true;
    if (!over) {
      chunks.push(buf);
      continue;
    }
    if (head === null) {
      const all = Buffer.concat([...chunks, buf]);
      chunks.length = 0;
      head = all.subarray(0, EDGE_BYTES);
      tail = all.subarray(Math.max(0, all.length - EDGE_BYTES));
    } else tail = Buffer.concat([tail, buf]).subarray(-EDGE_BYTES);
  }
  if (!over) return { tooLarge: false, raw: Buffer.concat(chunks) };
  return { tooLarge: true, head: (head ?? Buffer.alloc(0)).toString('utf8'), tail: tail.toString('utf8') };
}

/** The values of the top-level keys `id` and `method` found in the first bytes of a JSON object (a depth-aware scan, so an `id` inside `params` is not taken). */
function topLevelKeys(head: string): { id?: string | number; method?: string } {
  const out: { id?: string | number; method?: string } = {};
  let depth = 0;
  for (let i = 0; i < head.length; i++) {
    const c = head[i];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      const m = /^"((?:[^"\\]|\\.)*)"/.exec(head.slice(i));
      if (!m) break;
      i += m[0].length - 1;
      if (depth !== 1) continue;
      const after = /^\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)/.exec(head.slice(i + 1));
      if (!after) continue;
      const key = m[1];
      if (key === 'id' || key === 'method') {
        const value = JSON.parse(after[1]!) as string | number;
        if (key === 'id') out.id = value;
        else if (typeof value === 'string') out.method = value;
        i += after[0].length;
      }
    }
  }
  return out;
}

/**
 * The JSON-RPC answer to an over-limit MCP request: a tools/call gets a tool result with
 * `isError` and the 413 envelope (like every other tool error); other methods a JSON-RPC error
 * carrying the envelope as `data`. The id is the top-level one at the start of the message or,
 * as the MCP SDK writes it, its last key (unknown: null).
 */
export function tooLargeRpcAnswer(head: string, tail: string): Record<string, unknown> {
  const found = topLevelKeys(head);
  const last = /"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)\s*\}\s*$/.exec(tail);
  const id = found.id ?? (last ? (JSON.parse(last[1]!) as string | number) : null);
  const envelope = errors.tooLarge(LIMITS.requestBytes).envelope();
  if (found.method === 'tools/call')
    return { jsonrpc: '2.0', id, result: { isError: true, content: [{ type: 'text', text: JSON.stringify(envelope) }] } };
  return { jsonrpc: '2.0', id, error: { code: -32600, message: envelope.error.message, data: envelope } };
}
