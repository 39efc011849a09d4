/**
 * A real OpenID Connect provider for the app's single sign-on tests (`oidc-provider`, in
 * process, on a random loopback port). The listening socket exists before the provider, so a
 * test can start the work-graph server with the issuer URL first and register its redirect URI
 * after (`configure`). Its interaction step signs in the account the test names (`signInAs`)
 * and grants `openid email profile` without a form: the protocol around it (discovery,
 * authorization code with PKCE, state, nonce, signed ID token, userinfo) is the provider's own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

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
      const provider = new Provider(issuer, {
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
