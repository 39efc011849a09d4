/**
 * The history plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { answer, defineOperation, NodeId, object, s } from '../../kernel/operation.js';
import * as ops from './operations.js';

/** A commit sha or prefix: 7-40 hex (upper case is read as lower case). */
const Sha = (description: string) => s.string(description, { pattern: '^[0-9a-fA-F]{7,40}$' });
/** A slug filter: a node id, or empty (no filter, as when the query key is given without a value). */
const OptionalSlug = (description: string) => s.string(description, { pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200 });
const nullableString = s.stringOrNull();

const historyEntryProps = {
  sha: s.string(),
  short: s.string(),
  actor: s.string(),
  actor_name: s.string(),
  actor_email: s.string(),
  date: s.string(),
  message: s.string(),
  internal: s.boolean(),
  person: nullableString,
};
const HistoryEntry = answer(historyEntryProps);

export const HistoryList = answer({
  id: s.string(),
  head: nullableString,
  count: s.integer(),
  total: s.integer(),
  history: s.array(HistoryEntry),
});
export const HistoryDetail = answer(
  {
    ...historyEntryProps,
    change: s.enum(['A', 'M', 'D', 'R']),
    patch: s.string(),
    content: nullableString,
    id: s.string(),
    path: s.string(),
    previous_path: s.string(),
  },
  [
    'sha',
    'short',
    'actor',
    'actor_name',
    'actor_email',
    'date',
    'message',
    'internal',
    'person',
    'change',
    'patch',
    'content',
    'id',
    'path',
  ],
);

const Limit = (def: number, max: number) => s.integer(`entries to return, default ${def}, max ${max} (larger values are clamped)`);

export const GetNodeHistoryInput = object({ id: NodeId, limit: Limit(50, 200) }, ['id']);

export const getNodeHistory = defineOperation({
  name: 'get_node_history',
  summary: "A node's version history, newest first",
  description:
    'Version history of one node, newest first: who changed it, when, through which operation, and whether the write was server-internal. Answers for any id that ever had a commit (deleted nodes too).',
  input: GetNodeHistoryInput,
  output: HistoryList,
  errors: [503],
  run: ops.getNodeHistory,
});

export const GetHistoryEntryInput = object({ id: NodeId, sha: Sha('a commit of this node (7-40 hex)') }, ['id', 'sha']);

export const getHistoryEntry = defineOperation({
  name: 'get_history_entry',
  summary: "One entry of a node's history, with its diff and content",
  description:
    "One commit of a node's history: the entry with its change (A/M/D/R), unified diff patch and the file content at that commit (null when the commit deleted the node). A sha prefix matching two of the node's commits is 409.",
  input: GetHistoryEntryInput,
  output: HistoryDetail,
  errors: [409, 503],
  run: ops.getHistoryEntry,
});

export const NodeHistoryInput = object(
  {
    id: { ...NodeId, description: 'node id, e.g. task-fix-login' },
    limit: s.integer('entries to return, default 50, max 200'),
    sha: Sha('a commit of this node (7-40 hex) to show in detail'),
  },
  ['id'],
);

/** The `node_history` tool: the list, or with `sha` one entry in detail. */
export const nodeHistory = defineOperation({
  name: 'node_history',
  summary: "A node's version history, or one entry of it",
  description:
    'Version history of one node, newest first: who changed it, when, through which operation, and whether the write was server-internal. With `sha` (7-40 hex), one entry with its change (A/M/D/R), unified diff patch and the file content at that commit (null when the commit deleted the node).',
  input: NodeHistoryInput,
  output: s.union([HistoryList, HistoryDetail]),
  errors: [409, 503],
  run: ops.nodeHistory,
});

export const LookupCommitInput = object(
  { sha: Sha('code commit sha or prefix (7-40 hex)'), repo: OptionalSlug('repository slug, repo-<slug> or an alias') },
  ['sha'],
);

export const CommitLinks = s.array(
  answer(
    {
      repo: s.string(),
      sha: s.string(),
      id: s.string(),
      type: s.string(),
      title: s.string(),
      summary: s.string(),
      status: nullableString,
      project: nullableString,
    },
    ['repo', 'sha', 'id', 'type', 'summary'],
  ),
);

export const lookupCommit = defineOperation({
  name: 'lookup_commit',
  summary: 'The nodes linked to a code commit',
  description:
    'The nodes that link a code commit (repo@sha): sha is at least 7 hex characters, abbreviated or full; `repo` narrows to one repository (its slug, repo-<slug> or an alias). An unknown commit is an empty list.',
  input: LookupCommitInput,
  output: CommitLinks,
  run: ops.lookupCommit,
});

export const RecentChangesInput = object({
  since: s.string('commit sha, ISO date or relative phrase', { maxLength: 200 }),
  project: OptionalSlug('project slug, proj-<slug> or repo-<slug>'),
  limit: s.integer('default 100, max 500'),
});

export const ChangeFeed = answer(
  {
    changes: s.array(
      answer(
        {
          id: s.string(),
          change: s.enum(['A', 'M', 'D', 'R']),
          commit: s.string(),
          date: s.string(),
          committed_by: s.string(),
          type: nullableString,
          title: nullableString,
          authored_via: nullableString,
          author: nullableString,
          origin: s.enum(['machine', 'human']),
        },
        ['id', 'change', 'commit', 'date', 'committed_by', 'origin'],
      ),
    ),
    count: s.integer(),
    head: nullableString,
    since: nullableString,
    generated_at: s.string(),
    project: s.string(),
  },
  ['changes', 'count', 'head', 'since', 'generated_at'],
);

export const recentChanges = defineOperation({
  name: 'recent_changes',
  summary: 'The change feed: the newest change per node, newest first',
  description:
    'The change feed: the newest change per node, newest first. `since` is a graph commit sha (7-40 hex), an ISO date, or a phrase like "yesterday" or "3 days ago"; `project` scopes to one project (deletions omitted); `limit` default 100, max 500. `origin` tells machine-written (capture, distill, gardener) from human changes.',
  input: RecentChangesInput,
  output: ChangeFeed,
  errors: [503],
  run: ops.recentChanges,
});

export const GetBriefingInput = object(
  {
    project: { ...NodeId, description: 'project slug, proj-<slug>, repo-<slug> or an alias' },
    fp: s.array(
      s.string(undefined, { maxLength: 1000 }),
      'repository fingerprints: root:<sha> or remote:<host/path>, comma-separated or repeated',
      { maxItems: 20 },
    ),
  },
  ['project'],
);

export const Briefing = answer(
  {
    found: s.boolean(),
    version: nullableString,
    body: nullableString,
    project_brief: answer({ found: s.boolean(), id: s.string(), title: s.string(), version: s.string(), body: s.string() }),
    graph_status: answer({
      head: nullableString,
      node_count: s.integer(),
      scoped_nodes: s.integer(),
      open: s.integer(),
      done: s.integer(),
    }),
    project: nullableString,
    title: s.string(),
    resolved_via: s.string(),
    fingerprints_learned: s.array(s.string()),
    alias_proposal: s.object(),
    warnings: s.array(s.string()),
  },
  ['found', 'version', 'body', 'graph_status', 'project'],
);

export const getBriefing = defineOperation({
  name: 'get_briefing',
  summary: "A project's briefing: its node body, version and graph status",
  description:
    "The briefing of a project or repo slug: its node body and version, the grouping project's brief for a repo slug (`project_brief`), and graph status counts. With `fp` (root:<sha> or remote:<host/path>, at most 20) the server learns the fingerprints onto the owning project, and an unknown slug with a known fingerprint files an alias proposal. An unknown slug is found:false.",
  input: GetBriefingInput,
  output: Briefing,
  run: ops.getBriefing,
});
