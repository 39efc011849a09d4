/**
 * A real OpenID Connect provider for the app's single sign-on tests (`oidc-provider`, in
 * process, on a random loopback port). The listening socket exists before the provider, so a
 * test can start the work-graph server with the issuer URL first and register its redirect URI
 * after (`configure`). Its interaction step signs in the account the test names (`signInAs`)
 * and grants `openid email profile` without a form: the protocol around it (discovery,
 * authorization code with PKCE, state, nonce, signed ID token, userinfo) is the provider's own.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';

/**
 * The provider's storage, in memory and per provider (the shape of oidc-provider's adapter
 * interface): named in the configuration, so the provider does not fall back to its
 * development adapter and warn about it on every start.
 */
function memoryAdapter(): new (name: string) => Adapter {
  const store = new Map<string, { payload: AdapterPayload; expires: number }>();
  const live = (key: string): AdapterPayload | undefined => {
    const hit = store.get(key);
    if (!hit) return undefined;
    if (hit.expires <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return hit.payload;
  };
  return class MemoryAdapter implements Adapter {
    constructor(private readonly name: string) {}
    private key(id: string): string {
      return `${this.name}:${id}`;
    }
    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      store.set(this.key(id), { payload, expires: Date.now() + expiresIn * 1000 });
      if (payload.grantId) store.set(`grant:${payload.grantId}:${this.key(id)}`, { payload: {}, expires: Date.now() + expiresIn * 1000 });
      if (payload.uid)
        store.set(`uid:${this.name}:${payload.uid}`, { payload: { id } as AdapterPayload, expires: Date.now() + expiresIn * 1000 });
      if (payload.userCode)
        store.set(`code:${this.name}:${payload.userCode}`, { payload: { id } as AdapterPayload, expires: Date.now() + expiresIn * 1000 });
    }
    async find(id: string): Promise<AdapterPayload | undefined> {
      return live(this.key(id));
    }
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const ref = live(`uid:${this.name}:${uid}`) as { id?: string } | undefined;
      return ref?.id ? live(this.key(ref.id)) : undefined;
    }
    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      const ref = live(`code:${this.name}:${userCode}`) as { id?: string } | undefined;
      return ref?.id ? live(this.key(ref.id)) : undefined;
    }
    async consume(id: string): Promise<void> {
      const hit = live(this.key(id));
      if (hit) hit.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      const prefix = `grant:${grantId}:`;
      for (const key of [...store.keys()])
        if (key.startsWith(prefix)) {
          store.delete(key.slice(prefix.length));
          store.delete(key);
        }
    }
  };
}

export interface TestAccount {
  email: string;
  email_verified: boolean;
  name: string;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, TestAccount>;
  /** the account the next sign-in logs in as */
  signInAs(sub: string): void;
  /** registers the client with the work-graph server's callback URL and starts answering */
  configure(redirectUri: string): void;
  close(): Promise<void>;
}

export async function startOidcProvider(): Promise<TestOidcProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, TestAccount>();
  let current: string | null = null;
  const clientId = 'workgraph-app';
  const clientSecret = 'test-client-secret-0123456789abcdef';
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    signInAs(sub) {
      current = sub;
    },
    configure(redirectUri) {
      // its own signing key (named, so the provider does not use and warn about its development keys)
      const signing = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
      const provider = new Provider(issuer, {
        adapter: memoryAdapter(),
        jwks: { keys: [{ ...signing, kid: 'test-signing', use: 'sig', alg: 'RS256' }] },
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        features: { devInteractions: { enabled: false } },
        // short lifetimes for a test run (named, so the provider does not warn about its defaults)
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        async findAccount(_ctx, sub) {
          const account = accounts.get(sub);
          if (!account) return undefined;
          return { accountId: sub, claims: async () => ({ sub, ...account }) };
        },
      });
      const callback = provider.callback();
      server.on('request', (req, res) => {
        if (!req.url?.startsWith('/interaction/')) return void callback(req, res);
        void (async () => {
          const details = await provider.interactionDetails(req, res);
          if (details.prompt.name === 'login') {
            if (!current) throw new Error('the test named no account to sign in as');
            await provider.interactionFinished(req, res, { login: { accountId: current } }, { mergeWithLastSubmission: false });
            return;
          }
          const grant = new provider.Grant({ accountId: details.session!.accountId, clientId });
          grant.addOIDCScope('openid email profile');
          const grantId = await grant.save();
          await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
        })().catch((err: unknown) => {
          res.statusCode = 500;
          res.end(err instanceof Error ? err.message : String(err));
        });
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
