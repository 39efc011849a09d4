/**
 * "Was I hit?": every change to an identity fact in a tenant's git history (people, admin
 * rights, agent ownership, identity fields), with who made it, with which credential, through
 * which operation, flagged when no identity operation made it. Shared by
 * `workgraph audit identity` (scripts/workgraph.ts, reading SVC_DATA_DIR without opening the
 * tenant) and GET /v1/admin/audit/identity (tool `audit_identity`).
 *
 * Facts are recomputed from each commit's diff with the registry's declarations
 * (kernel/identity-guard.ts), never taken from the commit's own claims, so commits made before
 * the guard existed are judged the same way. Who and how come from the commit: its author, and
 * the `Svc-*` trailers the write path adds (`Svc-Op`, `Svc-Via`, `Svc-Person`, `Svc-Agent`,
 * `Svc-Session`, `Svc-Credential`, `Svc-Identity`), plus the node's `authored_via` stamp.
 */
import { parseStoredNode, type Frontmatter } from '../../kernel/codec.js';
import { streamBlobs, runGit } from '../../kernel/git/cli.js';
import { makeRecord } from '../../kernel/graph-index.js';
import { identityFactChanges, type NodeImage } from '../../kernel/identity-guard.js';
import { Registry, type EdgeTypeDef, type NodeTypeDef, type SchemaPack } from '../../kernel/registry.js';
import { schemaLayerOf } from '../../kernel/tenant.js';
import { streamLog, trailersOf, type ParsedCommit, type RawChange } from '../../kernel/git-log.js';
import { IDENTITY_OPS } from './authority.js';
import { hashPrefix, type TokenRecord } from '../../kernel/auth.js';

export interface IdentityAuditEntry {
  commit: string;
  date: string;
  op: string;
  via: string | null;
  author: { name: string; email: string; person: string | null };
  agent: string | null;
  session: string | null;
  /** the credential kind: the `Svc-Credential` trailer, else inferred (`agent` when an agent trailer is present, `person` otherwise) */
  credential: string;
  /** true when the trailer named it; false when inferred from an older commit */
  credential_recorded: boolean;
  authored_via: string | null;
  nodes: string[];
  changes: string[];
  identity_operation: boolean;
  flagged: boolean;
  reason: string | null;
}

export interface IdentityAudit {
  entries: IdentityAuditEntry[];
  count: number;
  flagged: number;
  commits_scanned: number;
}

/** A token minted for an agent after a flagged change of its owner: what a hijacker may hold. */
export interface TokenAtRisk {
  hash_prefix: string;
  kind: string;
  agent: string;
  person: string;
  minted_by: string | null;
  created: string;
  revoked_at: string | null;
  /** the flagged commit that gave `person` the agent */
  after_commit: string;
}

const OWNERSHIP_CHANGE = /^adds (\S+) -owned-by-> (\S+)$/;

/**
 * Token mints are not commits; a token minted for an agent whose ownership a flagged commit
 * changed, by or for the person it was moved to, after that commit, is listed so it can be revoked.
 */
export function tokensAtRisk(entries: IdentityAuditEntry[], records: TokenRecord[]): TokenAtRisk[] {
  const out: TokenAtRisk[] = [];
  for (const entry of entries) {
    if (!entry.flagged) continue;
    for (const change of entry.changes) {
      const m = OWNERSHIP_CHANGE.exec(change);
      if (!m) continue;
      const [, agent, person] = m as unknown as [string, string, string];
      for (const r of records) {
        if (r.agent !== agent || (r.person !== person && r.minted_by !== person) || r.created < entry.date) continue;
        out.push({
          hash_prefix: hashPrefix(r.hash),
          kind: r.kind,
          agent,
          person: r.person,
          minted_by: r.minted_by,
          created: r.created,
          revoked_at: r.revoked_at,
          after_commit: entry.commit,
        });
      }
    }
  }
  return out;
}

function nodeImage(text: string | undefined): NodeImage | null {
  if (text === undefined) return null;
  try {
    const parsed = parseStoredNode(text);
    return { frontmatter: parsed.frontmatter, body: parsed.body };
  } catch {
    return null;
  }
}

/**
 * Audits the first-parent history of `main` in `gitdir` (newest first). `registry` says which
 * facts are identity facts (the tenant's, or `auditRegistry` for a tenant that is not open).
 */
export async function auditIdentityHistory(
  gitdir: string,
  registry: Registry,
  opts: { onlyFlagged?: boolean } = {},
): Promise<IdentityAudit> {
  const commits: Array<{ commit: ParsedCommit; changes: RawChange[] }> = [];
  let tip: string;
  try {
    tip = (await runGit(gitdir, ['rev-parse', '--verify', '--quiet', 'refs/heads/main'])).toString('utf8').trim();
  } catch {
    return { entries: [], count: 0, flagged: 0, commits_scanned: 0 };
  }
  await streamLog(gitdir, tip, (commit, changes) => {
    const nodeChanges = changes.filter((c) => c.path.startsWith('nodes/') && c.path.endsWith('.md'));
    if (nodeChanges.length > 0) commits.push({ commit, changes: nodeChanges });
  });
  const oids = new Set<string>();
  for (const c of commits) for (const ch of c.changes) for (const oid of [ch.oldBlob, ch.newBlob]) if (oid) oids.add(oid);
  const blobs = new Map<string, string>();
  await streamBlobs(gitdir, [...oids], (oid, text) => void blobs.set(oid, text), { missing: 'skip' });

  const entries: IdentityAuditEntry[] = [];
  for (const { commit, changes } of commits) {
    const facts: string[] = [];
    const nodes: string[] = [];
    let stamp: Frontmatter | null = null;
    for (const ch of changes) {
      const before = nodeImage(ch.oldBlob ? blobs.get(ch.oldBlob) : undefined);
      const after = nodeImage(ch.newBlob ? blobs.get(ch.newBlob) : undefined);
      const id = String((after ?? before)?.frontmatter.id ?? ch.path.replace(/^.*\//, '').replace(/\.md$/, ''));
      const found = identityFactChanges(registry, id, before, after);
      if (found.length === 0) continue;
      nodes.push(id);
      facts.push(...found);
      stamp ??= (after ?? before)?.frontmatter ?? null;
    }
    if (facts.length === 0) continue;
    const trailers = trailersOf(commit.message);
    const subject = commit.message.split('\n')[0] ?? '';
    const op = trailers['Svc-Op'] ?? /^([a-z_]+):/.exec(subject)?.[1] ?? subject;
    const agent = trailers['Svc-Agent'] ?? null;
    const recorded = trailers['Svc-Credential'];
    // After the guard, an identity change without the authority cannot be committed, and every
    // one made with it carries `Svc-Identity`; before it, only the identity operations' names tell.
    const identityOperation = trailers['Svc-Identity'] !== undefined || IDENTITY_OPS.has(op);
    const entry: IdentityAuditEntry = {
      commit: commit.sha,
      date: new Date(commit.timestamp * 1000).toISOString(),
      op,
      via: trailers['Svc-Via'] ?? null,
      author: { name: commit.authorName, email: commit.authorEmail, person: trailers['Svc-Person'] ?? null },
      agent,
      session: trailers['Svc-Session'] ?? null,
      credential: recorded ?? (agent ? 'agent' : 'person'),
      credential_recorded: recorded !== undefined,
      authored_via: stamp && typeof stamp.authored_via === 'string' ? stamp.authored_via : null,
      nodes,
      changes: facts,
      identity_operation: identityOperation,
      flagged: !identityOperation,
      reason: identityOperation ? null : `identity fact changed by '${op}', which is not an identity operation`,
    };
    if (!opts.onlyFlagged || entry.flagged) entries.push(entry);
  }
  return { entries, count: entries.length, flagged: entries.filter((e) => e.flagged).length, commits_scanned: commits.length };
}

/**
 * The registry of a tenant that is not open (the CLI): the seed pack, the plugins' native
 * types, and the active schema nodes at the head of `main` (a graph schema may declare new
 * identity edge types).
 */
export async function auditRegistry(
  gitdir: string,
  pack: SchemaPack,
  nativeTypes: NodeTypeDef[],
  nativeEdges: EdgeTypeDef[],
): Promise<Registry> {
  let listing: string;
  try {
    listing = (await runGit(gitdir, ['ls-tree', '-r', 'refs/heads/main', '--', 'nodes/schema'])).toString('utf8');
  } catch {
    listing = '';
  }
  const files = listing
    .split('\n')
    .map((line) => /^\d+ blob ([0-9a-f]+)\t(.+)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ oid: m[1]!, path: m[2]! }));
  const texts = new Map<string, string>();
  await streamBlobs(
    gitdir,
    files.map((f) => f.oid),
    (oid, text) => void texts.set(oid, text),
    { missing: 'skip' },
  );
  const layers = files
    .map((f) => {
      const image = nodeImage(texts.get(f.oid));
      return image ? makeRecord(f.path, f.oid, texts.get(f.oid)!, image.frontmatter, image.body) : null;
    })
    .filter((r): r is NonNullable<typeof r> => r !== null && r.type === 'schema' && r.status === 'active')
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map(schemaLayerOf);
  return new Registry(pack, nativeTypes, nativeEdges, layers);
}
