/**
 * A real HTTP fake of an external capture ingester (docs/design.md §6, `SVC_INGEST_URL`) on a
 * loopback port, speaking the wire format of plugins/capture/README.md:
 *
 *   POST / {version, org, text, context, source, attempt, errors?, previous?, registry}
 *     -> 200 {drafts: [{type, summary, body?, title?, status?, project?, edges?, fields?}], warnings?}
 *
 * Tests script the answers (`answer`), read the requests it received, make it answer an
 * HTTP error or garbage, or stop it to make it unreachable.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface IngestRequestBody {
  version: number;
  org: string;
  text: string;
  context: Record<string, unknown>;
  source: string | null;
  attempt: number;
  errors?: Array<{ draft: number | null; field: string; message: string }>;
  previous?: unknown;
  registry: { node_types: Array<{ type: string; capturable: boolean }>; edge_types: Array<{ type: string }> };
}

export type FakeAnswer = { status?: number; body: unknown } | { raw: string; status?: number };

export interface FakeIngester {
  url: string;
  /** every request body received, in order */
  requests: IngestRequestBody[];
  /** decides each answer; default: no drafts */
  answer: (req: IngestRequestBody) => FakeAnswer;
  /** stops listening: later calls find nothing there (connection refused) */
  stop(): Promise<void>;
}

export async function startFakeIngester(): Promise<FakeIngester> {
  const fake: FakeIngester = {
    url: '',
    requests: [],
    answer: () => ({ body: { drafts: [] } }),
    stop: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: IngestRequestBody;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as IngestRequestBody;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{"error":"bad json"}');
        return;
      }
      fake.requests.push(body);
      const answer = fake.answer(body);
      if ('raw' in answer) {
        res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
        res.end(answer.raw);
        return;
      }
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  let stopped = false;
  fake.url = `http://127.0.0.1:${port}/ingest`;
  fake.stop = async () => {
    if (stopped) return;
    stopped = true;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return fake;
}
