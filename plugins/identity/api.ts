/**
 * size: 24 operation declarations whose schemas are their documentation (tool and API text).
 * The identity plugin's operations (docs/spec.md "Identity and agents"), each declared once:
 * input and answer schemas, error statuses, and the function that runs it (operations.ts,
 * agents.ts). The routes, the tools and the OpenAPI document read them.
 *
 * Optional body fields accept `null` as "not given", as the hand checks these schemas replace
 * did. Rules that need the graph or the token store (the person or agent exists, the caller
 * owns the agent, a prefix is unambiguous, an expiry is within its cap) stay in `run`.
 */
import { answer, defineOperation, NodeId, object, s, type TSchema } from '../../kernel/operation.js';
import { ORG_PATTERN } from '../../kernel/tenants.js';
import * as agents from './agents.js';
import { SESSION_PATTERN } from './gates.js';
import * as ops from './operations.js';
import * as signin from './signin-links.js';

// ---------------------------------------------------------------- field schemas

const nullable = s.nullable;
const str = s.stringOrNull;

/** A single-line text of at most `max` characters. */
const line = (description: string, max = 200) => s.string(description, { maxLength: max, pattern: '^[^\\r\\n]*$' });
/** A required single-line text that is not blank. */
const requiredLine = (description: string, max = 200) => s.string(description, { maxLength: max, pattern: '^[^\\r\\n]*\\S[^\\r\\n]*$' });

const PersonId = s.string('person node id, person-<slug>', { pattern: '^person-[a-z0-9-]+$', maxLength: 200 });
const AgentId = s.string('agent node id, agent-<slug>', { pattern: '^agent-[a-z0-9-]+$', maxLength: 200 });
const PathAgentId = { ...NodeId, description: 'agent node id, e.g. agent-build-bot' };
/** A revoke prefix: lowercase hex, 8-64 characters, so a typo cannot hit a stranger's token. */
const HashPrefix = s.string('token hash prefix: 8-64 lowercase hex characters (as listed under hash_prefix)', {
  pattern: '^[0-9a-f]+$',
  minLength: 8,
  maxLength: 64,
});
const Expires = (what: string) => str(`${what}: '<N>d' or an ISO date (null or omitted: the default)`);
const Label = nullable(line('a note for the token listing (single line, at most 200 characters)'));
/** What a harness names one run; safe in commit trailers and frontmatter. */
const Session = s.string('session id: 1-128 characters of letters, digits, . _ : - (starting with a letter or digit)', {
  pattern: SESSION_PATTERN.source,
});
/** A capability slug: harness, MCP server, skill or plugin names such as `claude-code`, `github`, `pdf.read`. */
const SlugList = (what: string) =>
  nullable(
    s.array(s.string(undefined, { pattern: '^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$' }), `${what} (slugs; at most 500)`, { maxItems: 500 }),
  );

// ---------------------------------------------------------------- answer schemas

const nullStr = s.stringOrNull();
const ownTokenProps = {
  hash_prefix: s.string(),
  person: s.string(),
  label: nullStr,
  name: nullStr,
  email: nullStr,
  created: s.string(),
  expires: nullStr,
  expired: s.boolean(),
  last_used: nullStr,
};
const OwnTokenEntry = answer(ownTokenProps);
const TeamTokenEntry = answer({ ...ownTokenProps, agent: nullStr }, [
  'hash_prefix',
  'person',
  'name',
  'email',
  'created',
  'expires',
  'expired',
  'last_used',
]);
const AgentTokenEntry = answer(
  {
    hash_prefix: s.string(),
    label: nullStr,
    standing: s.boolean(),
    created: s.string(),
    expires: nullStr,
    expired: s.boolean(),
    last_used: nullStr,
    agent: nullStr,
    owner: s.string(),
  },
  ['hash_prefix', 'label', 'standing', 'created', 'expires', 'expired', 'last_used'],
);
const TokenList = <T extends TSchema>(entry: T) => answer({ tokens: s.array(entry), count: s.integer() });
export const Revoked = answer({ revoked: s.const(true), hash_prefix: s.string(), oauth_grants_revoked: s.integer() });
export const AgentCreated = answer({
  id: s.string(),
  owner: s.string(),
  spiffe: s.string(),
  pubkey: nullStr,
  status: s.string(),
  revision: nullStr,
});
export const CapabilityMap = answer({
  harnesses: s.array(s.string()),
  reachable_mcp: s.array(s.string()),
  skills: s.array(s.string()),
  plugins: s.array(s.string()),
  deny: s.array(s.string()),
});
const capabilityRecordProps = {
  agent: s.string(),
  capabilities: CapabilityMap,
  published_at: s.string(),
  last_seen: s.string(),
  published_by: s.string(),
  session: s.string(),
};
export const CapabilityRecord = answer(capabilityRecordProps, ['agent', 'capabilities', 'published_at', 'last_seen', 'published_by']);
const Host = { agent: s.string(), owner: nullStr, published_at: s.string(), last_seen: s.string(), age_seconds: s.integer() };

// ---------------------------------------------------------------- own PATs

export const OwnTokenList = TokenList(OwnTokenEntry);

export const listOwnTokens = defineOperation({
  name: 'list_own_tokens',
  summary: "List the caller's own personal access tokens",
  description:
    'The personal access tokens of the caller (never the plaintext, never a full hash); agent session tokens are excluded. Needs a person token (403 otherwise).',
  input: object({}),
  output: OwnTokenList,
  errors: [403],
  run: ops.listOwnTokens,
});

export const MintOwnTokenInput = object({ expires: Expires('expiry (default and cap 1 year)'), label: Label });
export const OwnTokenMinted = answer({
  token: s.string(),
  hash_prefix: s.string(),
  person: s.string(),
  name: nullStr,
  email: nullStr,
  label: nullStr,
  expires: s.string(),
});

export const mintOwnToken = defineOperation({
  name: 'mint_own_token',
  summary: 'Mint a personal access token for the caller',
  description:
    "Mints a personal access token bound to the caller's person; the plaintext is returned once. `expires` default and cap 1 year (a past date or one beyond the cap is 422, never clamped).",
  input: MintOwnTokenInput,
  output: OwnTokenMinted,
  errors: [403],
  example: { expires: '90d', label: 'laptop' },
  run: ops.mintOwnToken,
});

export const RevokeTokenInput = object({ prefix: HashPrefix }, ['prefix']);

export const revokeOwnToken = defineOperation({
  name: 'revoke_own_token',
  summary: "Revoke one of the caller's own tokens by hash prefix",
  description:
    "Revokes one of the caller's personal access tokens and, in cascade, the OAuth grants minted from it. A prefix that is not the caller's is 404; an ambiguous one 409.",
  input: RevokeTokenInput,
  output: Revoked,
  errors: [403, 409],
  example: { prefix: '3f2a9c1b' },
  run: ops.revokeOwnToken,
});

// ---------------------------------------------------------------- admin tokens

export const TeamTokenList = TokenList(TeamTokenEntry);

export const listTeamTokens = defineOperation({
  name: 'list_team_tokens',
  summary: 'List every live personal and standing agent token of the team (admin)',
  input: object({}),
  output: TeamTokenList,
  errors: [403],
  run: ops.listTeamTokens,
});

export const AdminMintTokenInput = object({ person: PersonId, expires: Expires('expiry (default and cap 1 year)'), label: Label }, [
  'person',
]);
export const AdminTokenMinted = answer({
  token: s.string(),
  hash_prefix: s.string(),
  person: s.string(),
  name: nullStr,
  email: nullStr,
  expires: s.string(),
});

export const adminMintToken = defineOperation({
  name: 'admin_mint_token',
  summary: 'Mint a personal access token for an existing person (admin)',
  description:
    'Mints a personal access token for an existing person node (never creates one); the plaintext is returned once. `expires` default and cap 1 year.',
  input: AdminMintTokenInput,
  output: AdminTokenMinted,
  errors: [403],
  example: { person: 'person-alice', expires: '30d' },
  run: ops.adminMintToken,
});

export const AdminRevoked = answer({ revoked: s.const(true), hash_prefix: s.string() });

export const adminRevokeToken = defineOperation({
  name: 'admin_revoke_token',
  summary: 'Revoke any token by hash prefix (admin)',
  description:
    'Revokes any token (and the OAuth grants derived from it) by a hash prefix of at least 8 hex characters; an ambiguous prefix is 409.',
  input: RevokeTokenInput,
  output: AdminRevoked,
  errors: [403, 409],
  example: { prefix: '3f2a9c1b' },
  run: ops.adminRevokeToken,
});

// ---------------------------------------------------------------- people

export const PeopleList = answer({
  people: s.array(
    answer({
      id: s.string(),
      name: s.string(),
      email: nullStr,
      roles: s.array(s.string()),
      is_admin: s.boolean(),
      status: s.string(),
      tokens: s.integer(),
      active_tokens: s.integer(),
      last_used: nullStr,
    }),
  ),
  count: s.integer(),
});

export const listPeople = defineOperation({
  name: 'list_people',
  summary: 'List the people of the team with their token counts (admin)',
  input: object({}),
  output: PeopleList,
  errors: [403],
  run: ops.listPeople,
});

export const CreatePersonInput = object(
  {
    name: requiredLine('display name (single line, at most 200 characters)'),
    email: requiredLine('email address (single line, at most 200 characters)'),
    id: nullable({ ...PersonId, description: 'person-<slug>; default: an opaque deterministic hash of the email' }),
    roles: nullable(
      s.array(s.string(undefined, { pattern: '^[a-z0-9][a-z0-9-]*$', maxLength: 64 }), 'role slugs (kebab-case, at most 20)', {
        maxItems: 20,
      }),
    ),
    invite: nullable(s.boolean('also issue an organization invitation at the identity provider')),
    connection_id: nullable(
      s.string('the provider connection, when several are configured', { pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$' }),
    ),
    org: nullable(
      s.string("the org the invitation pins (honored on an unbound server; a bound server's org otherwise)", {
        pattern: ORG_PATTERN.source,
      }),
    ),
  },
  ['name', 'email'],
);
/** The invitation outcome: issued (with the provider's id) or failed (with the reason). */
export const OrgInvitation = answer(
  {
    status: s.enum(['issued', 'failed']),
    invitation_id: s.string(),
    org: nullStr,
    email: s.string(),
    connection_id: s.string(),
    reason: s.string(),
  },
  ['status'],
);
export const PersonCreated = answer(
  {
    id: s.string(),
    name: s.string(),
    email: s.string(),
    roles: s.array(s.string()),
    revision: nullStr,
    org_invitation: OrgInvitation,
  },
  ['id', 'name', 'email', 'roles', 'revision'],
);

export const createPerson = defineOperation({
  name: 'create_person',
  summary: 'Create a person node, optionally inviting them at the identity provider (admin)',
  description:
    'Creates a person node (never an admin: no stewards edge). `id` defaults to an opaque hash of the email. `invite: true` also issues an organization invitation at the identity provider; its failure never rolls back the person and is reported under org_invitation. On a server bound to an org a disagreeing `org` is 403.',
  input: CreatePersonInput,
  output: PersonCreated,
  errors: [403, 409],
  example: { name: 'Alice Example', email: 'alice@example.com', roles: ['backend'] },
  run: ops.createPerson,
});

/** A person named by the path. */
export const PersonIdInput = object({ id: PersonId }, ['id']);
export const Offboarded = answer({
  offboarded: s.string(),
  tokens_revoked: s.integer(),
  oauth_grants_revoked: s.integer(),
  render_tickets: s.string('how the share tickets the person minted behave: they are not revoked and stay valid until they expire'),
  render_tickets_valid_until: s.string(
    'the latest moment a share ticket the person minted before offboarding can still be used (now + 30 days)',
    { format: 'date-time' },
  ),
});

export const offboardPerson = defineOperation({
  name: 'offboard_person',
  summary: 'Offboard a person: revoke every token and OAuth grant bound to them (admin)',
  description:
    'Revokes every personal token and OAuth grant bound to the person and keeps the person node. Share tickets the person minted cannot be revoked: they stay valid until they expire (at most 30 days); `render_tickets` says so and `render_tickets_valid_until` is the latest such expiry. Offboarding oneself is 422.',
  input: PersonIdInput,
  output: Offboarded,
  errors: [403],
  example: { id: 'person-alice' },
  run: ops.offboardPerson,
});

export const InvitePersonInput = object(
  {
    id: PersonId,
    expires_in_hours: s.integer(`how long the link can be opened, in hours (default 24, at most ${signin.SIGNIN_LINK_MAX_HOURS})`, {
      minimum: 1,
      maximum: signin.SIGNIN_LINK_MAX_HOURS,
    }),
  },
  ['id'],
);
export const SigninLink = answer({
  person: s.string(),
  url: s.string('the one-time sign-in link, shown once: the secret is in its #fragment; only its hash is kept'),
  expires_at: s.string('the link works once, until this moment (24 hours unless asked otherwise)', { format: 'date-time' }),
});

export const invitePerson = defineOperation({
  name: 'invite_person',
  summary: 'A one-time app sign-in link for a person (admin)',
  description:
    'Admin only. A sign-in link for the web app, shown once, for one use, valid 24 hours or `expires_in_hours` (1-168); it signs the person in without a token. A new invite replaces the older link; offboarding kills it. 409 when the app plugin is not enabled.',
  input: InvitePersonInput,
  output: SigninLink,
  errors: [403, 409],
  example: { id: 'person-alice', expires_in_hours: 72 },
  run: signin.invitePerson,
});

// ---------------------------------------------------------------- admin rights and audit

export const AdminAnswer = answer({
  id: s.string(),
  is_admin: s.boolean(),
  status: s.enum(['granted', 'revoked', 'unchanged']),
  revision: nullStr,
});

export const grantAdmin = defineOperation({
  name: 'grant_admin',
  summary: 'Make a person an admin (admin)',
  description:
    'Admin only. Adds the stewards edge from the person to proj-root (admin rights). The only way to grant admin rights: any other write of that edge (edge routes, puts, imports, hooks) is 403 forbidden. The commit is authored by the granting admin (op grant_admin). Already an admin: status unchanged.',
  input: PersonIdInput,
  output: AdminAnswer,
  errors: [403],
  example: { id: 'person-alice' },
  run: ops.grantAdmin,
});

export const revokeAdmin = defineOperation({
  name: 'revoke_admin',
  summary: "Remove a person's admin rights (admin)",
  description:
    'Admin only. Removes the stewards edge from the person to proj-root. The last admin of a tenant cannot be removed: 409 last_admin. The commit is authored by the revoking admin (op revoke_admin). Not an admin: status unchanged.',
  input: PersonIdInput,
  output: AdminAnswer,
  errors: [403, 409],
  example: { id: 'person-alice' },
  run: ops.revokeAdmin,
});

export const AuditEntry = answer({
  commit: s.string(),
  date: s.string(),
  op: s.string(),
  via: nullStr,
  author: answer({ name: s.string(), email: s.string(), person: nullStr }),
  agent: nullStr,
  session: nullStr,
  credential: s.string(),
  credential_recorded: s.boolean(),
  authored_via: nullStr,
  nodes: s.array(s.string()),
  changes: s.array(s.string()),
  identity_operation: s.boolean(),
  flagged: s.boolean(),
  reason: nullStr,
});

export const AuditIdentityInput = object({ flagged: s.boolean('only the flagged changes') });
export const IdentityAudit = answer({
  org: s.string(),
  entries: s.array(AuditEntry),
  count: s.integer(),
  flagged: s.integer(),
  commits_scanned: s.integer(),
  tokens_at_risk: s.array(
    answer({
      hash_prefix: s.string(),
      kind: s.string(),
      agent: s.string(),
      person: s.string(),
      minted_by: nullStr,
      created: s.string(),
      revoked_at: nullStr,
      after_commit: s.string(),
    }),
  ),
});

export const auditIdentity = defineOperation({
  name: 'audit_identity',
  summary: 'Every change to an identity fact in the history, flagging those no identity operation made (admin)',
  description:
    'Admin only. Reads the git history: each commit that changed an identity fact (people, admin rights, agent ownership, identity fields), newest first, with its author, credential kind, route/operation and the facts it changed; flagged when it was not made by an identity operation (grant_admin, revoke_admin, create_person, create_agent, import_person, bootstrap). `flagged: true` lists only those. `tokens_at_risk`: tokens minted for an agent after a flagged change of its owner (revoke them with DELETE /v1/admin/tokens/{prefix}). Same as `workgraph audit identity`.',
  input: AuditIdentityInput,
  output: IdentityAudit,
  errors: [403],
  run: ops.auditIdentity,
});

// ---------------------------------------------------------------- agents

const AgentEntry = answer({ id: s.string(), label: s.string(), owner: nullStr, spiffe: s.string(), pubkey: nullStr, status: s.string() });

export const ListAgentsInput = object({ all: s.boolean('every agent of the team (admin only)') });
export const AgentList = answer({ agents: s.array(AgentEntry), count: s.integer() });

export const listAgents = defineOperation({
  name: 'list_agents',
  summary: "List the caller's agents, or every agent with all=1 (admin)",
  input: ListAgentsInput,
  output: AgentList,
  errors: [403],
  run: agents.listAgents,
});

const agentFields = {
  label: requiredLine('display label (single line, at most 200 characters); the id derives from it when omitted'),
  id: nullable({ ...AgentId, description: 'agent-<slug>; default: agent- plus a slug of the label' }),
  pubkey: nullable(s.string('public key of the agent (at most 4096 characters)', { maxLength: 4096, pattern: '\\S' })),
};

export const CreateAgentInput = object(
  { ...agentFields, owner: s.any('ignored: the owner is always the caller (POST /v1/admin/agents names another)') },
  ['label'],
);

export const createAgent = defineOperation({
  name: 'create_agent',
  summary: 'Create an agent owned by the caller',
  description:
    "Creates an agent node owned by the caller's person (never taken from the payload: an `owner` field is ignored). Duplicate id 409.",
  input: CreateAgentInput,
  output: AgentCreated,
  errors: [403, 409],
  example: { label: 'Build Bot' },
  run: agents.createAgent,
});

export const AdminCreateAgentInput = object(
  { ...agentFields, owner: nullable({ ...PersonId, description: "the owning person (default: the caller's person)" }) },
  ['label'],
);

export const adminCreateAgent = defineOperation({
  name: 'admin_create_agent',
  summary: 'Create an agent for any person (admin)',
  input: AdminCreateAgentInput,
  output: AgentCreated,
  errors: [403, 409],
  example: { label: 'Fleet Runner', owner: 'person-alice' },
  run: agents.adminCreateAgent,
});

export const BindSessionInput = object({ session: Session }, ['session']);
export const SessionBound = s.union([
  answer({ ok: s.const(true), agent: s.string(), session: s.string() }),
  answer({ unchanged: s.const(true) }),
]);

export const bindSession = defineOperation({
  name: 'bind_session',
  summary: 'Bind a deferred per-session agent token to its session (write-once)',
  description:
    'Authenticated by the per-session agent token itself; a non-agent token is 403. Binding is write-once: the same session again answers {unchanged: true}, another one 409.',
  input: BindSessionInput,
  output: SessionBound,
  errors: [403, 409],
  example: { session: 'run-2026-11-24-a' },
  run: agents.bindSession,
});

export const MintAgentTokenInput = object(
  {
    id: PathAgentId,
    standing: nullable(s.boolean('a standing token (spans sessions, up to 1 year)')),
    session: nullable({ ...Session, description: 'per-session mode: the session the token is bound to (omitted or null: bound later)' }),
    audience: nullable(line('per-session mode: the audience the token is meant for')),
    expires: Expires('expiry'),
    label: { ...Label, description: 'standing mode: a note for the token listing (single line, at most 200 characters)' },
  },
  ['id'],
);
export const AgentTokenMinted = s.union([
  answer({ token: s.string(), expires_at: s.string(), agent: s.string(), session: nullStr }),
  answer({
    token: s.string(),
    hash_prefix: s.string(),
    agent: s.string(),
    owner: s.string(),
    label: nullStr,
    expires: s.string(),
    standing: s.const(true),
  }),
]);

export const mintAgentToken = defineOperation({
  name: 'mint_agent_token',
  summary: 'Mint a per-session or standing token for an agent the caller owns',
  description:
    'Per-session mode (default): `{session?, audience?, expires?}`; expires (`<N>m`, `<N>h`, `<N>d` or an ISO date) may only shorten the 7-day cap; session null defers the binding. Standing mode: `{standing: true, expires?, label?}`, default and cap 1 year; session and audience are 422 there, label is 422 in per-session mode.',
  input: MintAgentTokenInput,
  output: AgentTokenMinted,
  errors: [403, 409],
  example: { session: 'run-2026-11-24-a', expires: '8h' },
  run: agents.mintAgentToken,
});

/** An agent named by the path. */
export const AgentIdInput = object({ id: PathAgentId }, ['id']);
export const AgentTokenList = TokenList(AgentTokenEntry);

export const listAgentTokens = defineOperation({
  name: 'list_agent_tokens',
  summary: "List an agent's standing tokens (owner only)",
  input: AgentIdInput,
  output: AgentTokenList,
  errors: [403],
  run: agents.listAgentTokens,
});

export const RevokeAgentTokenInput = object({ id: PathAgentId, prefix: HashPrefix }, ['id', 'prefix']);

export const revokeAgentToken = defineOperation({
  name: 'revoke_agent_token',
  summary: "Revoke one of an agent's standing tokens by hash prefix (owner only)",
  input: RevokeAgentTokenInput,
  output: Revoked,
  errors: [403, 409],
  example: { prefix: '3f2a9c1b' },
  run: agents.revokeAgentToken,
});

// ---------------------------------------------------------------- capabilities

const rawMap = nullable(s.object('a map of capability lists: harnesses, reachable_mcp, skills, plugins'));

export const PublishCapabilitiesInput = object(
  {
    id: PathAgentId,
    harnesses: SlugList('harnesses the host runs'),
    reachable_mcp: SlugList('MCP servers the host reaches'),
    skills: SlugList('skills installed'),
    plugins: SlugList('plugins installed'),
    deny: SlugList('capabilities the host refuses'),
    probed: rawMap,
    declared: rawMap,
    capabilities: s.object('an envelope around either form'),
  },
  ['id'],
);
export const CapabilitiesPublished = answer({ ...capabilityRecordProps, changed: s.boolean() }, [
  'agent',
  'capabilities',
  'published_at',
  'last_seen',
  'published_by',
  'changed',
]);

export const publishCapabilities = defineOperation({
  name: 'publish_capabilities',
  summary: 'Publish what an agent host can do (owner or the agent itself)',
  description:
    'Publishes the capability map `{harnesses?, reachable_mcp?, skills?, plugins?, deny?}` (lists of slugs), also accepted as the raw `{probed, declared, deny}` form (probed and declared merged) or inside a `{capabilities: {...}}` envelope. Operational state, never committed. `changed` says whether the map differs from the last one.',
  input: PublishCapabilitiesInput,
  output: CapabilitiesPublished,
  errors: [403],
  example: { harnesses: ['claude-code'], reachable_mcp: ['github'], skills: ['pdf.read'] },
  run: agents.publishCapabilities,
});

export const readCapabilities = defineOperation({
  name: 'read_capabilities',
  summary: "Read an agent's published capability record (owner, the agent, or an admin)",
  input: AgentIdInput,
  output: CapabilityRecord,
  errors: [403],
  run: agents.readCapabilities,
});

export const agentHeartbeat = defineOperation({
  name: 'agent_heartbeat',
  summary: "Refresh an agent's last_seen (owner or the agent itself)",
  description:
    'Refreshes `last_seen` of the published capability record only; 404 when nothing was published. The request takes no body fields.',
  input: AgentIdInput,
  output: CapabilityRecord,
  errors: [403],
  example: {},
  run: agents.agentHeartbeat,
});

// ---------------------------------------------------------------- host matching

export const MatchProfileHostsInput = object(
  {
    id: { ...NodeId, description: 'profile node id' },
    owner: s.string("'me' or a person- id (default: the caller's person; admins: everyone)", {
      pattern: '^(me|person-[a-z0-9-]+)?$',
      maxLength: 200,
    }),
    max_age: s.string("hosts last seen longer ago are unsatisfiable: '30m', '12h', '7d' or milliseconds"),
  },
  ['id'],
);
export const ProfileHosts = answer({
  profile: s.string(),
  requires: s.object('the profile requirements, lists of slugs per kind'),
  satisfiable: s.array(answer(Host)),
  unsatisfiable: s.array(answer({ ...Host, reasons: s.array(s.string()) })),
  counts: answer({ satisfiable: s.integer(), unsatisfiable: s.integer(), total: s.integer() }),
});

export const matchProfileHosts = defineOperation({
  name: 'match_profile_hosts',
  summary: "Which agent hosts satisfy a profile's requirements",
  description:
    "Matches a profile- node's `requires` against the published capability records: satisfiable hosts freshest first, unsatisfiable ones with their reasons. Admins see the whole fleet; others only their own hosts (403 for another person's).",
  input: MatchProfileHostsInput,
  output: ProfileHosts,
  errors: [403],
  run: agents.matchProfileHosts,
});
