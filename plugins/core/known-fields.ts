/**
 * Frontmatter fields some rule of the server reads: the base node fields, the seed pack's
 * typed fields, and the fields the plugins interpret (lenses, workflows, questions, capture,
 * corrections, the gardener, identity, repos and projects). A client field outside this set is
 * stored as-is, and a put says so in its warnings.
 */
import { STAMP_KEYS } from '../../kernel/codec.js';

export const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  // every node
  'id',
  'type',
  'status',
  'summary',
  'title',
  'project',
  'edges',
  'commits',
  'created',
  'updated',
  'body',
  ...STAMP_KEYS,
  'priority',
  'priority_by',
  'priority_at',
  'priority_via',
  'readiness',
  'readiness_by',
  'readiness_at',
  'readiness_via',
  'wake',
  'needed_by',
  // person, agent, profile
  'name',
  'email',
  'roles',
  'label',
  'pubkey',
  'spiffe',
  'owner',
  'requires',
  // proj, repo
  'aliases',
  'fingerprints',
  'alias',
  'alias_for',
  // lens
  'query',
  'columns',
  'group_by',
  'sort',
  'params',
  'actions',
  'limit',
  // wf, run
  'steps',
  'lineage',
  'state',
  'workflow',
  'workflow_version',
  'inputs',
  'initiator',
  // schema
  'applies_to',
  'statuses',
  'edge_types',
  'hooks',
  // question, correction, finding, capture
  'text',
  'mentions',
  'asker',
  'routed_to',
  'routed_via',
  'target',
  'pin',
  'exclude',
  'guidance',
  'check',
  'detail',
  'resolution',
  'resolved_at',
  'source',
  'capture_reason',
  // imported items (plugins/import)
  'labels',
  'close_reason',
  'import_source',
  'import_id',
  'milestone',
  // the github plugin: a person's login; a synced node's issue (plugins/github/handlers/issues.ts)
  'github',
  'github_issue',
  'github_url',
  // linked GitHub pull requests' addresses (plugins/github/code-moves.ts)
  'pull_requests',
]);
