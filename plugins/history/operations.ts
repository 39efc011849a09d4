/**
 * History operations: node history and one history entry, code-commit lookup, the change
 * feed and project briefings. One function per operation; the REST routes and the MCP
 * tools (`node_history`, `recent_changes`) are thin adapters over these.
 */
import { createHash } from 'node:crypto';
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { writeActorOf } from '../../kernel/tenants.js';
import type {
  Briefing,
  ChangeFeed,
  CommitLinks,
  GetBriefingInput,
  GetHistoryEntryInput,
  GetNodeHistoryInput,
  HistoryDetail,
  HistoryList,
  LookupCommitInput,
  NodeHistoryInput,
  RecentChangesInput,
} from './api.js';
import { codeCommitIndexOf } from './code-commits.js';
import { commitIndexOf, type CommitIndex, type CommitInfo, type NodeChange } from './commit-index.js';
import { diffOf } from '../../kernel/git-log.js';
import { groupingOf, listOf, ownersOfFingerprint, resolveProject, sameFingerprint, scopeValues } from './projects.js';
import { parseSince } from './since.js';

/** `authored_via` values written by machines (docs/spec.md Reads rule 7); every other value is human. */
export const MACHINE_VIA = new Set(['capture', 'distill', 'gardener']);

/** Person ids by email, built on first need (only for commits without a Svc-Person trailer). */
function personLookup(tenant: Tenant): (email: string) => string | null {
  let byEmail: Map<string, string> | null = null;
  return (email) => {
    if (!byEmail) {
      byEmail = new Map();
      for (const id of tenant.index.idsOfType('person')) {
        const p = tenant.index.get(id);
        const e = p?.frontmatter.email;
        if (typeof e === 'string' && e) byEmail.set(e.trim().toLowerCase(), id);
      }
    }
    return byEmail.get(email.trim().toLowerCase()) ?? null;
  };
}

function historyEntry(commit: CommitInfo, personByEmail: (email: string) => string | null) {
  const person = commit.person ?? personByEmail(commit.authorEmail);
  return {
    sha: commit.sha,
    short: commit.sha.slice(0, 7),
    actor: commit.agent ?? person ?? commit.authorEmail,
    actor_name: commit.authorName,
    actor_email: commit.authorEmail,
    date: commit.date,
    message: commit.subject,
    internal: commit.internal,
    person,
  };
}

/** Limits are clamped, not rejected (docs/spec.md Reads rules 4 and 7); the schema makes them integers. */
function clamp(value: number | undefined, def: number, min: number, max: number): number {
  return value === undefined ? def : Math.min(max, Math.max(min, value));
}

// ---------------------------------------------------------------- node history

export async function getNodeHistory(ctx: OpContext, input: Static<typeof GetNodeHistoryInput>): Promise<Static<typeof HistoryList>> {
  const id = input.id;
  const limit = clamp(input.limit, 50, 1, 200);
  const commits = commitIndexOf(ctx.tenant);
  await commits.ready();
  const total = commits.changeCount(id);
  if (total === undefined) throw errors.notFound(`node ${id}`);
  const people = personLookup(ctx.tenant);
  const history = [];
  // newest first along the node's backward links: `limit` record reads, whatever the history's length
  for (const change of commits.changesOf(id)) {
    if (history.length >= limit) break;
    history.push(historyEntry(change.commit, people));
  }
  return { id, head: ctx.tenant.head, count: history.length, total, history };
}

/**
 * The node's changes in commits whose sha starts with `sha`, oldest first. A node with few
 * changes walks its own links; one with very many (more than one in 64 of all commits) scans
 * the sha table instead, which costs 20 bytes a commit rather than a record read a change.
 */
function changesMatching(commits: CommitIndex, id: string, sha: string, total: number): NodeChange[] {
  if (total * 64 > commits.count) {
    const hits: NodeChange[] = [];
    for (const { seq } of commits.resolve(sha)) hits.push(...commits.changesIn(seq, id));
    return hits;
  }
  const hits: NodeChange[] = [];
  for (const change of commits.changesOf(id)) if (change.commit.sha.startsWith(sha)) hits.push(change);
  return hits.reverse();
}

export async function getHistoryEntry(ctx: OpContext, input: Static<typeof GetHistoryEntryInput>): Promise<Static<typeof HistoryDetail>> {
  const id = input.id;
  const sha = input.sha.toLowerCase();
  const commits = commitIndexOf(ctx.tenant);
  await commits.ready();
  const total = commits.changeCount(id);
  if (total === undefined) throw errors.notFound(`node ${id}`);
  const hits = changesMatching(commits, id, sha, total);
  if (hits.length === 0) throw errors.notFound(`commit ${sha} in the history of ${id}`, { id, sha });
  if (hits.length > 1) {
    throw errors.conflict(`sha ${sha} is ambiguous in the history of ${id}; give more hex digits`, {
      id,
      sha,
      candidates: hits.map((c) => c.commit.sha),
    });
  }
  const change = hits[0]!;
  const { tenant } = ctx;
  const paths = change.oldPath ? [change.oldPath, change.path] : [change.path];
  const [patch, content] = await Promise.all([
    diffOf(tenant.store.gitdir, change.commit.parent, change.commit.sha, paths),
    change.blob ? tenant.store.readBlob(change.blob) : Promise.resolve(null),
  ]);
  return {
    ...historyEntry(change.commit, personLookup(tenant)),
    change: change.change,
    patch,
    content,
    id,
    path: change.path,
    ...(change.oldPath ? { previous_path: change.oldPath } : {}),
  };
}

/** The `node_history` tool: the list, or with `sha` one entry in detail. */
export async function nodeHistory(
  ctx: OpContext,
  input: Static<typeof NodeHistoryInput>,
): Promise<Static<typeof HistoryList> | Static<typeof HistoryDetail>> {
  return input.sha === undefined
    ? getNodeHistory(ctx, { id: input.id, limit: input.limit })
    : getHistoryEntry(ctx, { id: input.id, sha: input.sha });
}

// ---------------------------------------------------------------- commit lookup

/** Repo names a `repo` filter accepts: as given, without `repo-`, and the repo node's aliases. */
function repoNames(tenant: Tenant, repo: string): Set<string> {
  const names = new Set([repo]);
  if (repo.startsWith('repo-')) names.add(repo.slice(5));
  const resolved = resolveProject(tenant, repo);
  if (resolved?.node.type === 'repo') {
    names.add(resolved.node.id.slice(5));
    for (const a of listOf(resolved.node, 'aliases')) names.add(a);
  }
  return names;
}

/** `repo` empty is no filter. */
export async function lookupCommit(ctx: OpContext, input: Static<typeof LookupCommitInput>): Promise<Static<typeof CommitLinks>> {
  const sha = input.sha.toLowerCase();
  const repo = input.repo || null;
  const { tenant } = ctx;
  const accepted = repo ? repoNames(tenant, repo) : null;
  const seen = new Set<string>();
  const matches = [];
  for (const link of codeCommitIndexOf(tenant).lookup(sha)) {
    if (accepted && !accepted.has(link.repo)) continue;
    const key = `${link.id} ${link.repo}@${link.sha}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const node = tenant.index.get(link.id);
    if (!node) continue;
    matches.push({
      repo: link.repo,
      sha: link.sha,
      id: node.id,
      type: node.type,
      title: node.title,
      summary: String(node.frontmatter.summary ?? ''),
      status: node.status,
      project: node.project,
    });
  }
  matches.sort((a, b) => (a.repo !== b.repo ? (a.repo < b.repo ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : a.sha < b.sha ? -1 : 1));
  return matches;
}

// ---------------------------------------------------------------- change feed

/** `project` empty is no filter. */
export async function recentChanges(ctx: OpContext, input: Static<typeof RecentChangesInput>): Promise<Static<typeof ChangeFeed>> {
  const { tenant } = ctx;
  const limit = clamp(input.limit, 100, 1, 500);
  const project = input.project || null;
  const commits = commitIndexOf(tenant);
  await commits.ready();
  const since = await parseSince(input.since, commits, ctx.services.clock.now());
  const scope = project ? scopeValues(tenant, project) : null;

  // Newest first; the first change met for a node is its newest one. The walk stops at the
  // `since` boundary (the first commit, from the newest, after or older than it) or at `limit`.
  const boundary = since === null ? -1 : since.kind === 'commit' ? since.seq : commits.newestBefore(since.ms);
  const picked: NodeChange[] = [];
  const seen = new Set<string>();
  /** takes a node's newest change unless scoped out; true once `limit` are taken */
  const take = (change: NodeChange): boolean => {
    if (seen.has(change.id)) return false;
    seen.add(change.id);
    if (scope) {
      if (change.change === 'D') return false;
      const record = tenant.index.get(change.id);
      if (!record?.project || !scope.has(record.project)) return false;
    }
    picked.push(change);
    return picked.length >= limit;
  };
  // Commit by commit while that finds new nodes; a long stretch of commits on nodes already
  // met (a few nodes edited very often) continues from the per-node table instead, so the cost
  // follows the nodes in the answer, not the commits since the boundary.
  const walkAtMost = 2 * limit + 256;
  let walked = 0;
  let done = false;
  let next = commits.count;
  for (const commit of commits.newestFirst()) {
    if (commit.seq <= boundary || walked++ >= walkAtMost) break;
    next = commit.seq;
    if (commit.changes.some(take)) {
      done = true;
      break;
    }
  }
  if (!done && next - 1 > boundary) for (const change of commits.newestChanges(boundary, next, seen)) if (take(change)) break;

  const people = personLookup(tenant);
  const changes: Static<typeof ChangeFeed>['changes'] = [];
  for (const change of picked) {
    const record = change.change === 'D' ? undefined : tenant.index.get(change.id);
    const facts = record
      ? {
          type: record.type,
          title: record.title,
          author: typeof record.frontmatter.author === 'string' ? record.frontmatter.author : null,
          authored_via: typeof record.frontmatter.authored_via === 'string' ? record.frontmatter.authored_via : null,
        }
      : await commits.deletedFacts(change);
    const authoredVia = facts.authored_via ?? change.commit.via;
    changes.push({
      id: change.id,
      change: change.change,
      commit: change.commit.sha,
      date: change.commit.date,
      committed_by: change.commit.person ?? people(change.commit.authorEmail) ?? change.commit.authorEmail,
      type: facts.type,
      title: facts.title,
      authored_via: authoredVia,
      author: facts.author,
      origin: authoredVia !== null && MACHINE_VIA.has(authoredVia) ? 'machine' : 'human',
    });
  }
  return {
    changes,
    count: changes.length,
    head: tenant.head,
    since: since === null ? null : since.kind === 'commit' ? since.sha : since.iso,
    generated_at: new Date(ctx.services.clock.now()).toISOString(),
    ...(project ? { project } : {}),
  };
}

// ---------------------------------------------------------------- briefing

const MAX_FINGERPRINTS_PER_CALL = 20;
const MAX_FINGERPRINTS_PER_NODE = 50;

/**
 * `root:<7-40 hex>` (a repository's root commit) or `remote:<host/path>` (a remote URL,
 * normalized: scheme, user, port and a trailing `.git` dropped, host lowercased, scp form
 * `host:path` read as `host/path`).
 */
export function parseFingerprints(raw: string[] | undefined): string[] {
  const items = (raw ?? []).map((p) => p.trim()).filter(Boolean);
  if (items.length > MAX_FINGERPRINTS_PER_CALL) {
    throw errors.validation(`at most ${MAX_FINGERPRINTS_PER_CALL} fingerprints per call`, [
      { field: 'fp', message: 'too many fingerprints' },
    ]);
  }
  const out: string[] = [];
  for (const item of items) {
    const bad = () =>
      errors.validation(`malformed fingerprint '${item.slice(0, 200)}': use root:<sha> or remote:<host/path>`, [
        { field: 'fp', value: item.slice(0, 200) },
      ]);
    const m = /^(root|remote):(.+)$/.exec(item);
    if (!m) throw bad();
    let fp: string;
    if (m[1] === 'root') {
      const sha = m[2]!.toLowerCase();
      if (!/^[0-9a-f]{7,40}$/.test(sha)) throw bad();
      fp = `root:${sha}`;
    } else {
      let v = m[2]!.trim();
      const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(v);
      if (scheme) v = v.slice(scheme[0].length);
      v = v.replace(/^[^@/]*@/, '');
      if (!scheme) v = v.replace(/^([^/:]+):(?!\d+\/)/, '$1/');
      v = v.replace(/^([^/:]+):\d+\//, '$1/');
      v = v.replace(/\/+$/, '').replace(/\.git$/i, '');
      const slash = v.indexOf('/');
      if (slash > 0) v = v.slice(0, slash).toLowerCase() + v.slice(slash);
      if (!/^[a-z0-9.-]+(\/[A-Za-z0-9._~-]+)+$/.test(v) || v.length > 400) throw bad();
      fp = `remote:${v}`;
    }
    if (!out.includes(fp)) out.push(fp);
  }
  return out;
}

function brief(record: NodeRecord) {
  return { found: true, id: record.id, title: record.title, version: record.revision, body: record.body };
}

function graphStatus(tenant: Tenant, slug: string | null) {
  let scoped = 0;
  let open = 0;
  let done = 0;
  if (slug) {
    const counted = new Set<string>();
    for (const value of scopeValues(tenant, slug)) {
      for (const id of tenant.index.idsInProject(value)) {
        if (counted.has(id)) continue;
        counted.add(id);
        const r = tenant.index.get(id)!;
        scoped++;
        if (tenant.registry.isTerminal(r.type, r.status)) done++;
        else open++;
      }
    }
  }
  return { head: tenant.head, node_count: tenant.index.size, scoped_nodes: scoped, open, done };
}

/** Adds fingerprints to a project node (an internal write attributed to the caller). */
async function learnFingerprints(ctx: OpContext, node: NodeRecord, fps: string[], warnings: string[]): Promise<string[]> {
  const known = listOf(node, 'fingerprints');
  const fresh: string[] = [];
  for (const fp of fps) {
    if (known.some((k) => sameFingerprint(k, fp))) continue;
    const others = ownersOfFingerprint(ctx.tenant, fp).filter((r) => r.id !== node.id);
    if (others.length > 0) {
      warnings.push(`fingerprint ${fp} already belongs to ${others.map((r) => r.id).join(', ')}; not learned onto ${node.id}`);
      continue;
    }
    fresh.push(fp);
  }
  if (fresh.length === 0) return [];
  if (!ctx.actor.bound) {
    warnings.push('fingerprints not learned: the token is not bound to a person node');
    return [];
  }
  const room = MAX_FINGERPRINTS_PER_NODE - known.length;
  if (room <= 0) {
    warnings.push(`${node.id} already holds ${MAX_FINGERPRINTS_PER_NODE} fingerprints; none learned`);
    return [];
  }
  const learned = fresh.slice(0, room);
  if (learned.length < fresh.length)
    warnings.push(`${node.id} holds at most ${MAX_FINGERPRINTS_PER_NODE} fingerprints; ${fresh.length - learned.length} not learned`);
  await ctx.tenant.write(writeActorOf(ctx.actor), { op: 'learn_fingerprints', via: ctx.via, internal: true }, async (draft) => {
    const current = draft.get(node.id);
    if (!current) return;
    const list = Array.isArray(current.frontmatter.fingerprints) ? (current.frontmatter.fingerprints as unknown[]).map(String) : [];
    for (const fp of learned) if (!list.includes(fp)) list.push(fp);
    current.frontmatter.fingerprints = list;
    // Bookkeeping, not an edit: the node keeps its last editor's attribution.
    draft.put(current, { stamp: false });
  });
  return learned;
}

export function aliasProposalId(slug: string, project: string): string {
  const plain = `dec-alias-${slug}-to-${project}`;
  return plain.length <= 120 ? plain : `dec-alias-${createHash('sha1').update(`${slug}\n${project}`).digest('hex').slice(0, 16)}`;
}

/** An unknown slug whose fingerprint a project carries: file (once) a proposed alias decision. */
async function proposeAlias(ctx: OpContext, slug: string, fps: string[], warnings: string[]) {
  let found: NodeRecord | null = null;
  let matched = '';
  for (const fp of fps) {
    const owners = ownersOfFingerprint(ctx.tenant, fp);
    if (owners.length > 0) {
      found = owners[0]!;
      matched = fp;
      break;
    }
  }
  if (!found) return null;
  const owner = found;
  const id = aliasProposalId(slug, owner.id);
  const existing = ctx.tenant.index.get(id);
  if (existing) return { id, status: existing.status, alias: slug, project: owner.id, fingerprint: matched, filed: false };
  if (!ctx.actor.bound) {
    warnings.push(`alias proposal ${slug} -> ${owner.id} not filed: the token is not bound to a person node`);
    return null;
  }
  const title = `alias ${slug} -> ${owner.id}`;
  await ctx.tenant.write(writeActorOf(ctx.actor), { op: 'propose_alias', via: ctx.via, internal: true }, async (draft) => {
    if (draft.get(id)) return;
    draft.put({
      frontmatter: {
        id,
        type: 'dec',
        status: 'proposed',
        title,
        summary: `Proposed: treat '${slug}' as an alias of ${owner.id}; a client reported the known fingerprint ${matched} for this unknown slug.`,
        project: owner.id,
        alias: slug,
        alias_for: owner.id,
        fingerprint: matched,
        edges: [{ type: 'relates-to', to: owner.id }],
      },
      body: `Accepting this decision adds \`${slug}\` to the \`aliases\` of ${owner.id}; rejecting it leaves the slug unknown.\n`,
    });
  });
  return { id, status: 'proposed', alias: slug, project: owner.id, fingerprint: matched, filed: true };
}

export async function getBriefing(ctx: OpContext, input: Static<typeof GetBriefingInput>): Promise<Static<typeof Briefing>> {
  const slug = input.project;
  const fps = parseFingerprints(input.fp);
  const { tenant } = ctx;
  const warnings: string[] = [];
  let resolved = resolveProject(tenant, slug);
  let learned: string[] = [];
  let proposal: Awaited<ReturnType<typeof proposeAlias>> = null;
  if (resolved && fps.length > 0) {
    learned = await learnFingerprints(ctx, resolved.node, fps, warnings);
    if (learned.length > 0) resolved = resolveProject(tenant, slug);
  } else if (!resolved && fps.length > 0) {
    proposal = await proposeAlias(ctx, slug, fps, warnings);
  }
  // a repo asked for by another name also gets its grouping project's brief
  const grouping = resolved && resolved.node.type === 'repo' && slug !== resolved.node.id ? groupingOf(tenant, resolved.node) : null;
  return {
    found: resolved !== null,
    version: resolved ? resolved.node.revision : null,
    body: resolved ? resolved.node.body : null,
    ...(grouping ? { project_brief: brief(grouping) } : {}),
    graph_status: graphStatus(tenant, resolved ? slug : null),
    project: resolved ? resolved.node.id : null,
    ...(resolved ? { title: resolved.node.title, resolved_via: resolved.via } : {}),
    ...(fps.length > 0 ? { fingerprints_learned: learned } : {}),
    ...(proposal ? { alias_proposal: proposal } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

// ---------------------------------------------------------------- alias acceptance

/** Accepting an alias proposal adds the alias to its project node (when no other project claims it). */
export async function applyAcceptedAlias(ctx: OpContext, node: NodeRecord): Promise<Record<string, unknown> | void> {
  const alias = node.frontmatter.alias;
  const target = node.frontmatter.alias_for;
  if (typeof alias !== 'string' || typeof target !== 'string') return;
  const claimed = resolveProject(ctx.tenant, alias);
  if (claimed) return { alias_applied: false, alias_warning: `${alias} already resolves to ${claimed.node.id}` };
  const project = ctx.tenant.index.get(target);
  if (!project || (project.type !== 'proj' && project.type !== 'repo'))
    return { alias_applied: false, alias_warning: `${target} is not a project node` };
  await ctx.tenant.write(writeActorOf(ctx.actor), { op: 'apply_alias', via: ctx.via }, async (draft) => {
    const current = draft.get(target);
    if (!current) return;
    const aliases = Array.isArray(current.frontmatter.aliases) ? (current.frontmatter.aliases as unknown[]).map(String) : [];
    if (!aliases.includes(alias)) aliases.push(alias);
    current.frontmatter.aliases = aliases;
    draft.put(current);
  });
  return { alias_applied: true, alias: { alias, project: target } };
}
