/**
 * The client ID metadata document fetcher (plugins/oauth/metadata-fetch.ts) on its own: which
 * addresses count as public, that the connection goes to the address that was checked (DNS
 * answered once, by the resolver given), and the caps: size, time, no redirects. Every server
 * here listens on loopback; nothing is sent anywhere else.
 */
import { expect } from 'chai';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  fetchMetadataDocument,
  isPublicAddress,
  METADATA_MAX_BYTES,
  METADATA_TIMEOUT_MS,
  MetadataRefused,
} from '../../../plugins/oauth/metadata-fetch.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; port: number; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    handler!(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, hits: () => hits };
}

async function refused(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(MetadataRefused);
    return (err as Error).message;
  }
  throw new Error('expected the fetch to be refused');
}

describe('oauth: client ID metadata document fetching (SSRF rules)', function () {
  this.timeout(20_000);

  it('only public unicast addresses are public', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fc00::1',
      'fd12::1',
      'fe80::1',
      'ff02::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      '2002:7f00:1::1',
      '64:ff9b::a00:1',
      'not an address',
    ]) {
      expect(isPublicAddress(a), a).to.equal(false);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(a), a).to.equal(true);
    expect(METADATA_MAX_BYTES).to.equal(64 * 1024);
    expect(METADATA_TIMEOUT_MS).to.equal(5000);
  });

  it('a host resolving to a loopback or private address is refused before any connection; http is refused', async () => {
    const s = await serve((_req, res) => res.end('{}'));
    try {
      let lookups = 0;
      const resolve = async () => {
        lookups++;
        return [{ address: '127.0.0.1', family: 4 }];
      };
      expect(
        await refused(fetchMetadataDocument(`https://metadata.test:${s.port}/client.json`, { allowPrivate: false, resolve })),
      ).to.include('non-public');
      const mapped = async () => [{ address: '::ffff:127.0.0.1', family: 6 }];
      expect(
        await refused(fetchMetadataDocument(`https://metadata.test:${s.port}/client.json`, { allowPrivate: false, resolve: mapped })),
      ).to.include('non-public');
      expect(
        await refused(fetchMetadataDocument(`http://metadata.test:${s.port}/client.json`, { allowPrivate: false, resolve })),
      ).to.include('https only');
      expect(
        await refused(fetchMetadataDocument(`https://user:pw@metadata.test:${s.port}/x`, { allowPrivate: false, resolve })),
      ).to.include('credentials');
      expect(lookups, 'http and credentials are refused before resolving').to.equal(1);
      expect(s.hits()).to.equal(0);
    } finally {
      s.server.close();
    }
  });

  it('the connection goes to the address the resolver gave, asked once (no second DNS answer to swap it)', async () => {
    const s = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ client_id: 'x', redirect_uris: [] }));
    });
    try {
      let lookups = 0;
      // metadata.test resolves nowhere in the system's DNS: reaching the server proves the pinned address was used
      const resolve = async () => {
        lookups++;
        return [{ address: '127.0.0.1', family: 4 }];
      };
      const doc = await fetchMetadataDocument(`http://metadata.test:${s.port}/client.json`, { allowPrivate: true, resolve });
      expect(doc).to.deep.equal({ client_id: 'x', redirect_uris: [] });
      expect(lookups).to.equal(1);
      expect(s.hits()).to.equal(1);
    } finally {
      s.server.close();
    }
  });

  it('caps: a document over the size cap, a redirect (not followed), an answer slower than the time cap', async () => {
    let slowRes: ServerResponse | null = null;
    const s = await serve((req, res) => {
      if (req.url === '/big') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ client_name: 'x'.repeat(METADATA_MAX_BYTES) }));
      } else if (req.url === '/chunked') {
        // no content-length: the cap counts what arrives
        res.setHeader('content-type', 'application/json');
        res.write('{"a":"');
        res.write('y'.repeat(METADATA_MAX_BYTES));
        res.end('"}');
      } else if (req.url === '/moved') {
        res.statusCode = 302;
        res.setHeader('location', '/target');
        res.end();
      } else if (req.url === '/slow') {
        slowRes = res; // never answers
      } else res.end('{"target":true}');
    });
    try {
      const opts = { allowPrivate: true };
      expect(await refused(fetchMetadataDocument(`http://127.0.0.1:${s.port}/big`, opts))).to.include('larger than');
      expect(await refused(fetchMetadataDocument(`http://127.0.0.1:${s.port}/chunked`, opts))).to.include('larger than');
      const before = s.hits();
      expect(await refused(fetchMetadataDocument(`http://127.0.0.1:${s.port}/moved`, opts))).to.include('302');
      expect(s.hits() - before, 'the redirect target was not requested').to.equal(1);
      const started = Date.now();
      expect(await refused(fetchMetadataDocument(`http://127.0.0.1:${s.port}/slow`, { ...opts, timeoutMs: 300 }))).to.include(
        'no answer within 300 ms',
      );
      expect(Date.now() - started).to.be.below(5000);
    } finally {
      (slowRes as ServerResponse | null)?.destroy();
      s.server.close();
    }
  });
});
