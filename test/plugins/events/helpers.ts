/** Shared helpers of the events plugin tests: condition waits, raw SSE reading, emitted events. */
import { connect, type Socket } from 'node:net';
import type { NewEvent, WorkEvent } from '../../../kernel/events/types.js';
import type { TestServer } from '../../helpers/harness.js';

/** Appends an operational event through the tenant's log, as an operation would. */
export function emit(t: TestServer, event: Partial<NewEvent> & { type: string }): Promise<WorkEvent> {
  const tenant = t.server.services.tenants.get(t.org)!;
  return tenant.events.emit({ actor: null, nodes: [], project: null, payload: {}, ...event });
}

/** One SSE frame as sent: its fields (comments left out). */
export interface Frame {
  id?: string;
  event?: string;
  data?: string;
}

/** Splits SSE text into frames (`\n\n` separated), keeping the fields and dropping comment lines. */
export function parseFrames(text: string): Frame[] {
  const frames: Frame[] = [];
  for (const block of text.split('\n\n')) {
    const f: Frame = {};
    let any = false;
    for (const line of block.split('\n')) {
      const m = /^(id|event|data): ?(.*)$/.exec(line);
      if (!m) continue;
      f[m[1] as keyof Frame] = m[2];
      any = true;
    }
    if (any) frames.push(f);
  }
  return frames;
}

/** A raw HTTP/1.1 GET on a socket: nothing reads it until `resume()` (a client that stopped reading). */
export function rawStream(t: TestServer, path: string, token: string): { socket: Socket; received: () => string } {
  const url = new URL(t.url);
  const socket = connect(Number(url.port), url.hostname);
  let text = '';
  socket.setEncoding('utf8');
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n`,
  );
  socket.on('data', (chunk: string) => (text += chunk));
  socket.pause();
  return { socket, received: () => text };
}

/** A fetch-based SSE reader: every frame so far, and close. */
export async function openStream(
  t: TestServer,
  path: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; frames: () => Frame[]; text: () => string; ended: () => boolean; close: () => void; headers: Headers }> {
  const ac = new AbortController();
  const res = await fetch(t.url + path, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    signal: ac.signal,
  });
  let text = '';
  let ended = false;
  if (res.body) {
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
      } catch {
        /* aborted */
      }
      ended = true;
    })();
  }
  return {
    status: res.status,
    headers: res.headers,
    frames: () => parseFrames(text),
    text: () => text,
    ended: () => ended,
    close: () => ac.abort(),
  };
}

/** The body of a raw HTTP/1.1 answer (headers cut, chunked transfer encoding undone; ASCII bodies). */
export function httpBody(raw: string): string {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return '';
  const head = raw.slice(0, split).toLowerCase();
  let rest = raw.slice(split + 4);
  if (!head.includes('transfer-encoding: chunked')) return rest;
  let out = '';
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) break;
    const size = parseInt(rest.slice(0, eol), 16);
    if (!Number.isFinite(size) || size === 0) break;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
  return out;
}
