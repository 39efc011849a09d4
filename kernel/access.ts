/**
 * Who may call what: one access declaration per operation, kept by each plugin beside its
 * operation declarations (`plugins/<name>/access.ts`, attached as `PluginDef.access`). The
 * declarations describe the gates the operations enforce in `run`; they do not enforce
 * anything themselves, so the authorization matrix test (test/kernel/authorization-matrix.test.ts)
 * can hold each gate in the code to its declaration (a gate removed from `run` fails the test).
 * The plugin host refuses to boot a plugin with a declared operation that has no access entry,
 * and the table in docs/authorization.md and the `x-callers` of the OpenAPI document are
 * generated from them.
 */
import type { TokenKind } from './auth.js';

/**
 * The credential kinds a request can present (docs/spec.md "Authentication"; kernel/auth.ts, kernel/actor.ts):
 *
 * - `pat`: a personal access token (`svc_pat_`, TokenRecord kind `pat`);
 * - `agent-standing`: an agent's standing token (`svc_pat_`, kind `agent-standing`, `actor.agent` set);
 * - `agent-session`: a per-session agent token (`svc_ast_`, kind `agent-session`);
 * - `oauth`: an OAuth access token (`svc_oat_`, kind `oauth-access`), derived from a PAT;
 * - `connector-jwt`: a connector JWT verified by the oauth plugin (kind `connector-jwt`, never stored);
 * - `ticket`: a lens render ticket (query `ticket` or the `svc_render_ticket` cookie), honoured
 *   only on the render route of its lens;
 * - `none`: no credential.
 *
 * Every kind but `ticket` and `none` acts for a person (an agent token for its owner). Whether
 * that person is an admin (a `stewards` edge to proj-root) is the `admin` rule of a declaration,
 * not a kind of its own: "admin" in the generated table is a PAT of an admin, "member" a PAT of
 * anyone else.
 */
export const CREDENTIAL_KINDS = ['pat', 'agent-standing', 'agent-session', 'oauth', 'connector-jwt', 'ticket', 'none'] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

/** The kinds that act for a person (every one but a ticket and no credential). */
export const PERSON_KINDS = [
  'pat',
  'agent-standing',
  'agent-session',
  'oauth',
  'connector-jwt',
] as const satisfies readonly CredentialKind[];
export const AGENT_KINDS = ['agent-standing', 'agent-session'] as const satisfies readonly CredentialKind[];

/**
 * Ownership gates an operation enforces on the agent named by its `id` input:
 * - `agent`: the caller's person owns the agent (admin rights do not substitute);
 * - `agent-or-self`: that, or the caller is a token of the agent itself;
 * - `agent-or-self-or-admin`: that, or the caller is an admin's person credential (not an agent token).
 */
export type Ownership = 'agent' | 'agent-or-self' | 'agent-or-self-or-admin';

/** A gate that applies only to some inputs (`all=1`, `force`, `auth=1`, another person's hosts). */
export interface AccessCondition {
  /** input fields that switch the gate on (merged over a valid input by the matrix test) */
  input: Record<string, unknown>;
  /** the kinds that may pass with this input (default: the operation's `callers`) */
  callers?: readonly CredentialKind[];
  /** the caller's person must be an admin with this input */
  admin?: boolean;
  /** one line for the table */
  note: string;
}

export interface OperationAccess {
  /** the credential kinds that may call it at all */
  callers: readonly CredentialKind[];
  /** the person behind the credential must be an admin (stewards edge to proj-root) */
  admin?: boolean;
  /**
   * the credential must be bound to an existing person node (403 `no_person` otherwise: a token
   * whose person was never created or was removed); writes always are
   */
  person?: boolean;
  /** an ownership gate on the agent named by the `id` input */
  owns?: Ownership;
  /** on what, in words: "any node of the tenant", "own tokens", "read-only" */
  scope: string;
  /** gates that apply to some inputs only */
  when?: readonly AccessCondition[];
}

/** A plugin's declarations, keyed by operation name (tool name or `METHOD /path` for an undeclared function). */
export type AccessMap = Readonly<Record<string, OperationAccess>>;

/** Shorthands for the common caller lists. */
export const callers = {
  /** every credential that acts for a person */
  anyPerson: PERSON_KINDS,
  /** people's own credentials and the credentials derived from them; no agent token */
  humans: ['pat', 'oauth', 'connector-jwt'] as const satisfies readonly CredentialKind[],
  /** a PAT only (minting new credentials) */
  patOnly: ['pat'] as const satisfies readonly CredentialKind[],
  agents: AGENT_KINDS,
} as const;

/**
 * A request that reaches the server outside the declared operations: what it accepts, for the
 * table (the kernel's and the protocol plugins' own endpoints).
 */
export interface RouteAccess {
  route: string;
  plugin: string;
  callers: readonly CredentialKind[] | readonly string[];
  scope: string;
}

export const NON_OPERATION_ROUTES: readonly RouteAccess[] = [
  { route: 'GET /healthz', plugin: 'kernel', callers: ['none'], scope: 'liveness only; any credential is ignored' },
  {
    route: 'GET /metrics',
    plugin: 'kernel',
    callers: ['metrics token (SVC_METRICS_TOKEN)'],
    scope: 'Prometheus text of the process; 404 when no metrics token is configured (METRICS_PORT serves it without one)',
  },
  {
    route: 'POST|GET|DELETE /mcp',
    plugin: 'kernel',
    callers: PERSON_KINDS,
    scope: "the tenant's tools; each tool call is gated as its operation is declared below (a ticket or no credential is 401)",
  },
  {
    route: 'GET /openapi.json, GET /docs, /docs/*',
    plugin: 'openapi',
    callers: ['none'],
    scope: "the API's shape for every plugin of the server; no tenant data",
  },
  { route: 'GET /.well-known/oauth-*', plugin: 'oauth', callers: ['none'], scope: 'OAuth discovery metadata' },
  {
    route: 'GET /oauth/authorize, POST /oauth/register',
    plugin: 'oauth',
    callers: ['none'],
    scope: 'starts a sign-in; registers a client (no tenant data)',
  },
  {
    route: 'POST /oauth/consent',
    plugin: 'oauth',
    callers: ['a PAT typed into the form (not an agent, OAuth or derived token)'],
    scope: "grants the client an OAuth access token for that PAT's person",
  },
  {
    route: 'POST /oauth/token, POST /oauth/revoke',
    plugin: 'oauth',
    callers: ['client credentials + code or refresh token'],
    scope: 'exchanges or revokes OAuth tokens of that grant only',
  },
  {
    route: 'POST /v1/integrations/github/webhook?tenant=:org',
    plugin: 'github',
    callers: [
      'GitHub: a delivery signed (X-Hub-Signature-256) with the webhook secret of the link of the repository or installation it names',
    ],
    scope: "queues the delivery for that link's tenant; its changes are written as the mapped person or the link's bot person",
  },
  {
    route: 'GET|POST /app/invite/:org, GET /app/signin/oidc, GET /app/signin/oidc/callback',
    plugin: 'app',
    callers: ['a one-time sign-in link (invite_person)', "an OpenID Connect provider's verified email"],
    scope: "signs the link's person, or the person of that email, in to the app (a new session); nothing else",
  },
  {
    route: 'GET|POST /app, /app/*',
    plugin: 'app',
    callers: ['app session cookie (signed in with a PAT, a sign-in link or OpenID Connect)'],
    scope: "the signed-in person's pages; each page calls the operations below with that person's rights",
  },
  {
    route: 'GET /views/:id, /app/views/:id',
    plugin: 'app',
    callers: ['app session cookie', 'ticket'],
    scope: 'one saved view; a ticket only its own lens, read-only',
  },
];

/**
 * Whether `kind` may call an operation with this declaration, held for a person who is an admin
 * or not, and whose person node exists or not (`personBound`).
 */
export function allows(
  access: Pick<OperationAccess, 'callers' | 'admin' | 'person'>,
  kind: CredentialKind,
  personIsAdmin: boolean,
  personBound = true,
): boolean {
  if (!access.callers.includes(kind)) return false;
  if (access.person && !personBound) return false;
  return !access.admin || personIsAdmin;
}

/** The effective declaration under a condition (`when` entry). */
export function underCondition(access: OperationAccess, condition: AccessCondition): OperationAccess {
  return { ...access, callers: condition.callers ?? access.callers, admin: condition.admin ?? access.admin };
}

/** One line saying who may call, for the OpenAPI description and the table. */
export function describeAccess(access: OperationAccess): string {
  const who = access.callers.length === 0 ? 'nobody' : access.callers.map(kindLabel).join(', ');
  const parts = [
    `Callers: ${who}${access.admin ? ' (the person must be an admin)' : access.person ? ' (bound to an existing person node)' : ''}; on: ${access.scope}.`,
  ];
  if (access.owns) parts.push(OWNERSHIP_TEXT[access.owns]);
  for (const c of access.when ?? [])
    parts.push(
      `With ${Object.entries(c.input)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(', ')}: ${c.note}.`,
    );
  return parts.join(' ');
}

export const OWNERSHIP_TEXT: Record<Ownership, string> = {
  agent: "Only the agent's owner (admin rights do not substitute).",
  'agent-or-self': "Only the agent's owner or the agent's own tokens.",
  'agent-or-self-or-admin': "Only the agent's owner, the agent's own tokens, or an admin's person credential.",
};

export const KIND_LABELS: Record<CredentialKind, string> = {
  pat: 'personal access token',
  'agent-standing': 'agent standing token',
  'agent-session': 'agent per-session token',
  oauth: 'OAuth access token',
  'connector-jwt': 'connector JWT',
  ticket: 'render ticket',
  none: 'no credential',
};

export function kindLabel(kind: string): string {
  return (KIND_LABELS as Record<string, string>)[kind] ?? kind;
}

/** The `x-callers` extension of an OpenAPI operation. */
export function openApiCallers(access: OperationAccess): Record<string, unknown> {
  return {
    callers: [...access.callers],
    admin: access.admin === true,
    person: access.person === true || access.admin === true,
    ...(access.owns ? { owns: access.owns } : {}),
    scope: access.scope,
    ...(access.when?.length
      ? {
          when: access.when.map((c) => ({
            input: c.input,
            ...(c.callers ? { callers: [...c.callers] } : {}),
            ...(c.admin !== undefined ? { admin: c.admin } : {}),
            note: c.note,
          })),
        }
      : {}),
  };
}

/** The credential kind of a token record, as access declarations name it. */
export function credentialKindOf(kind: TokenKind): CredentialKind {
  switch (kind) {
    case 'pat':
    case 'agent-standing':
    case 'agent-session':
    case 'connector-jwt':
      return kind;
    default:
      // an OAuth access token (grants and refresh tokens never authenticate a request)
      return 'oauth';
  }
}

/**
 * Whether some input lets `kind` call the operation: its own gate or one of its conditions
 * (`when`). tools/list shows a caller the tools that pass (an agent does not see the admin
 * tools it could only ever get 403 from); calling a tool still runs the operation's own check.
 */
export function mayEverCall(access: OperationAccess, kind: CredentialKind, personIsAdmin: boolean, personBound: boolean): boolean {
  if (allows(access, kind, personIsAdmin, personBound)) return true;
  return (access.when ?? []).some((c) => allows(underCondition(access, c), kind, personIsAdmin, personBound));
}
