/**
 * Input and answer schemas of the github link operations (kernel/operation.ts builders). The
 * descriptions are short on purpose: the tool input schemas count against the tools/list
 * budget (docs/decisions.md, "tools"); docs/github.md says the rest.
 */
import { answer, NodeId, object, s, type Static } from '../../kernel/operation.js';

// any id-shaped string: an unknown one is 404, never a schema error
export const LinkId = s.string('link id, ghl_...', { pattern: '^[A-Za-z0-9_-]+$', maxLength: 100 });
const Repo = s.string('owner/name', { pattern: '^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$', maxLength: 201 });
const Token = s.string('fine-grained token (issues: read/write)', { minLength: 10, maxLength: 1000, pattern: '^\\S+$' });
const App = object(
  {
    app_id: s.integer(undefined, { minimum: 1 }),
    private_key: s.string('PEM', { minLength: 100, maxLength: 10_000 }),
    installation_id: s.integer(undefined, { minimum: 1 }),
  },
  ['app_id', 'private_key', 'installation_id'],
);
const Secret = s.string('webhook secret; absent: generated, answered once', { minLength: 16, maxLength: 200 });
const StrMap = s.record(s.string(undefined, { minLength: 1, maxLength: 100 }));
export const MappingsInput = object({
  label_types: StrMap,
  label_priorities: s.record(s.enum(['p1', 'p2', 'p3'] as const)),
  people: s.record(NodeId),
  open_status: StrMap,
  closed_status: StrMap,
  not_planned_status: StrMap,
  default_type: s.string(undefined, { minLength: 1, maxLength: 100 }),
});
const Project = s.stringOrNull('project node for new nodes');
const BotPerson = s.string('person writing unmapped changes (default: you)', { pattern: '^person-[a-z0-9-]+$', maxLength: 200 });

export const LinkInput = object(
  {
    repo: Repo,
    token: Token,
    app: App,
    webhook_secret: Secret,
    mappings: MappingsInput,
    project: Project,
    bot_person: BotPerson,
    enabled: s.boolean(),
    first_sync: s.boolean("import the repository's issues once linked (default true)"),
  },
  ['repo'],
);
export const UpdateLinkInput = object(
  {
    id: LinkId,
    token: Token,
    app: App,
    webhook_secret: Secret,
    rotate_webhook_secret: s.boolean('new secret, answered once'),
    mappings: MappingsInput,
    project: Project,
    bot_person: BotPerson,
    enabled: s.boolean(),
  },
  ['id'],
);
export const LinkIdInput = object({ id: LinkId }, ['id']);

const Mappings = answer({
  label_types: s.record(s.string()),
  label_priorities: s.record(s.string()),
  people: s.record(s.string()),
  open_status: s.record(s.string()),
  closed_status: s.record(s.string()),
  not_planned_status: s.record(s.string()),
  default_type: s.string(),
});

export const LinkView = answer(
  {
    id: s.string(),
    repo: s.string(),
    auth: s.enum(['token', 'app'] as const),
    has_token: s.boolean(),
    has_private_key: s.boolean(),
    has_webhook_secret: s.boolean(),
    app_id: s.integerOrNull(),
    installation_id: s.integerOrNull(),
    webhook_url: s.string('paste into GitHub (content type application/json)'),
    mappings: Mappings,
    project: s.stringOrNull(),
    bot_person: s.string(),
    enabled: s.boolean(),
    state: s.enum(['active', 'disabled'] as const),
    disabled_reason: s.stringOrNull(),
    synced_issues: s.integer(),
    inbound: answer({
      queued: s.integer(),
      failed: s.integer(),
      last_error: s.stringOrNull(),
    }),
    created: s.string(),
    created_by: s.string(),
    updated: s.string(),
    updated_by: s.string(),
  },
  [
    'id',
    'repo',
    'auth',
    'has_token',
    'has_private_key',
    'has_webhook_secret',
    'app_id',
    'installation_id',
    'webhook_url',
    'mappings',
    'project',
    'bot_person',
    'enabled',
    'state',
    'disabled_reason',
    'synced_issues',
    'inbound',
    'created',
    'created_by',
    'updated',
    'updated_by',
  ],
);
export type LinkViewT = Static<typeof LinkView>;

export const LinkOutput = answer({ link: LinkView, webhook_secret: s.string('only when generated: shown this once') }, ['link']);
export const ListLinksOutput = answer({ links: s.array(LinkView) });
export const UnlinkOutput = answer({ id: s.string(), deleted: s.boolean(), unlinked_nodes: s.integer() });
