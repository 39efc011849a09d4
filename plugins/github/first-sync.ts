/**
 * The first sync of a newly linked repository (docs/github.md "First sync"): the repository's
 * issues (pull requests left out) come in through the existing importer (plugins/import,
 * `import_items`), so a first sync has what an import has: the create commit at the issue's
 * `created_at`, a closed issue closed by a second commit at its `closed_at`, priorities from the
 * labels, unchanged items not written, an item that cannot be represented refused with its
 * reason while the rest go on. Then each node gets its `github-sync` record (store.ts), the
 * state both sides agree on, and from there the two-way sync (handlers/issues.ts, outbound)
 * keeps it in step.
 *
 * Same node as the inbound path: the import source `gh` and source id `<repo-name>-<number>`
 * make the importer's id `<prefix>gh-<repo-name>-<number>`, the id handlers/issues.ts gives an
 * issue's node, and the node carries the same `github_issue` / `github_url` fields, so an issue
 * event arriving during or after the first sync adopts the node instead of making a second one.
 *
 * A re-run makes no duplicate and overwrites nothing: an issue whose sync record names an
 * existing node is already in the two-way sync and is skipped (its node may have moved on since),
 * and a node imported by an earlier run that stopped before its record was written is matched by
 * its id and `import_id` and only gets its record.
 *
 * Assignees: the people their logins map to (mapping.ts), matched by their own name and e-mail so
 * the importer finds them; an unmapped login creates no person (the sync record still holds it,
 * as the inbound path does).
 */
import type { Octokit } from '@octokit/rest';
import { invoke } from '../../kernel/operation.js';
import { RawResponse, StatusPayload, type OpContext } from '../../kernel/plugin.js';
import { importItems } from '../import/api.js';
import type { GithubHandler, Mapper } from './handlers/index.js';
import { normalizeLabels } from './mapping.js';
import { SvcError } from '../../kernel/errors.js';
import { githubClient, statusOf } from './client.js';
import { storesOf, syncOfIssue, type StoredLink } from './store.js';
import { issueSnapshot, mappedAssignees, newSyncRecord, readIssue, type GithubIssue } from './sync.js';

/** The import source of a first sync: the ids it gives are handlers/issues.ts's (`<prefix>gh-<name>-<number>`). */
export const FIRST_SYNC_SOURCE = 'gh';

/** The REST calls a first sync makes: listing a repository's issues, page by page (plugins/github/client.ts's client). */
export type IssueClient = Pick<Octokit, 'rest'>;

export interface FirstSyncReport {
  /** issues read (pull requests not counted) */
  issues: number;
  /** pull requests the list also answered: not imported (code moves work through handlers/pull-request.ts) */
  pull_requests: number;
  created: number;
  updated: number;
  unchanged: number;
  /** already in the two-way sync: left as they are */
  skipped: number;
  refused: Array<{ issue: number; reason: string }>;
  /** sync records written */
  records: number;
}

/** handlers/issues.ts's id segment for the repository's name. */
function nameSlug(repo: string): string {
  return (
    (repo.split('/')[1] ?? repo)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'repo'
  );
}

/** The importer's item of an issue. */
function itemOf(ctx: OpContext, link: StoredLink, map: Mapper, issue: ListedIssue) {
  const snap = issueSnapshot(issue);
  const type = map.typeOf(issue.labels);
  const priority = map.priorityOf(issue.labels);
  const people = mappedAssignees(map, snap.assignees)
    .map((login) => map.personOf(login))
    .filter((p): p is string => p !== null);
  const assignees = [...new Set(people)].flatMap((id) => {
    const fm = ctx.tenant.index.get(id)?.frontmatter ?? {};
    const name = typeof fm.name === 'string' && fm.name !== '' ? fm.name : undefined;
    const email = typeof fm.email === 'string' && fm.email !== '' ? fm.email : undefined;
    return name || email ? [{ ...(name ? { name } : {}), ...(email ? { email } : {}) }] : [];
  });
  return {
    source_id: `${nameSlug(link.repo)}-${issue.number}`,
    type,
    title: issue.title,
    summary: issue.title.slice(0, 500),
    body: snap.body,
    status: map.statusOf(type, issue.state, issue.state_reason),
    ...(snap.labels.length > 0 ? { labels: normalizeLabels(snap.labels) } : {}),
    ...(assignees.length > 0 ? { assignees } : {}),
    ...(priority === 'p1' || priority === 'p2' || priority === 'p3' ? { priority } : {}),
    ...(link.project ? { project: link.project } : {}),
    ...(issue.created_at ? { created_at: issue.created_at } : {}),
    ...(issue.updated_at ? { updated_at: issue.updated_at } : {}),
    ...(issue.closed_at ? { closed_at: issue.closed_at } : {}),
    ...(issue.state === 'closed' && issue.state_reason ? { close_reason: issue.state_reason } : {}),
    fields: { github_issue: `${link.repo}#${issue.number}`, github_url: issue.html_url },
  };
}

interface ListedIssue extends GithubIssue {
  created_at: string | null;
  closed_at: string | null;
}

/** The issues of a page of GET /repos/{owner}/{repo}/issues (pull requests, which that list includes, left out). */
function issuesOfPage(data: unknown[], report: FirstSyncReport): ListedIssue[] {
  const out: ListedIssue[] = [];
  for (const raw of data) {
    if (raw === null || typeof raw !== 'object') continue;
    // GitHub's issue list includes pull requests, told apart by their `pull_request` key
    if ('pull_request' in raw) {
      report.pull_requests++;
      continue;
    }
    const issue = readIssue(raw);
    if (!issue) continue;
    const r = raw as Record<string, unknown>;
    out.push({
      ...issue,
      created_at: typeof r.created_at === 'string' ? r.created_at : null,
      closed_at: typeof r.closed_at === 'string' ? r.closed_at : null,
    });
  }
  return out;
}

/**
 * Runs the first sync of `link` as the admin of `ctx` (the importer is an admin's operation,
 * and its commits are theirs, dated as GitHub dates the issues) with the link's mappings `map`
 * (inbound.ts `mapperOf`), reading the issues through the link's own credentials (client.ts:
 * throttled, retried) from the operator's API base.
 */
export async function firstSync(ctx: OpContext, link: StoredLink, map: Mapper): Promise<FirstSyncReport> {
  const client = await githubClient(link.auth, {
    baseUrl: ctx.services.config.githubApiUrl,
    log: ctx.services.log,
    context: { org: ctx.tenant.org, link: link.id },
  });
  return firstSyncWith(ctx, link, map, client);
}

/** Issues a page of the listing asks for (GitHub's maximum). */
const PER_PAGE = 100;

/**
 * The first sync with a given client: GET /repos/{owner}/{repo}/issues, every state, oldest
 * first, page by page until a page comes back short. Pages are counted here rather than
 * followed through the answer's `Link` header: the link's credentials only ever go to the
 * configured API base, never to a host an answer names.
 */
export async function firstSyncWith(ctx: OpContext, link: StoredLink, map: Mapper, client: IssueClient): Promise<FirstSyncReport> {
  const [owner, repo] = link.repo.split('/');
  if (!owner || !repo) return emptyReport();
  async function* pages() {
    for (let page = 1; ; page++) {
      const res = await client.rest.issues.listForRepo({
        owner: owner!,
        repo: repo!,
        state: 'all',
        sort: 'created',
        direction: 'asc',
        per_page: PER_PAGE,
        page,
      });
      const data = res.data as unknown[];
      yield data;
      if (data.length < PER_PAGE) return;
    }
  }
  return syncIssuePages(ctx, link, map, pages());
}

const emptyReport = (): FirstSyncReport => ({
  issues: 0,
  pull_requests: 0,
  created: 0,
  updated: 0,
  unchanged: 0,
  skipped: 0,
  refused: [],
  records: 0,
});

/**
 * Imports pages of GitHub issue objects (as GET /repos/{owner}/{repo}/issues answers them) and
 * pairs each node with its issue. Pages are imported as they arrive, so a large repository
 * never sits whole in memory.
 */
export async function syncIssuePages(
  ctx: OpContext,
  link: StoredLink,
  map: Mapper,
  pages: AsyncIterable<unknown[]>,
): Promise<FirstSyncReport> {
  const stores = storesOf(ctx.tenant);
  const report = emptyReport();
  for await (const page of pages) {
    const issues = issuesOfPage(page, report);
    report.issues += issues.length;
    const fresh = issues.filter((issue) => {
      const record = syncOfIssue(stores, link.id, issue.number);
      const synced = record !== undefined && ctx.tenant.index.has(record.node);
      if (synced) report.skipped++;
      return !synced;
    });
    if (fresh.length === 0) continue;
    const answered = await invoke(importItems, ctx, { source: FIRST_SYNC_SOURCE, items: fresh.map((i) => itemOf(ctx, link, map, i)) });
    // import_items answers its JSON object itself (never a raw or status-wrapped answer)
    const answer = answered instanceof StatusPayload ? answered.payload : answered;
    if (answer instanceof RawResponse) throw new Error('import_items answered a raw response');
    for (const [n, result] of answer.results.entries()) {
      const issue = fresh[n];
      if (!issue) continue;
      if (result.status === 'refused' || !result.id) {
        report.refused.push({ issue: issue.number, reason: result.reason ?? 'refused' });
        continue;
      }
      const status: 'created' | 'updated' | 'unchanged' = result.status;
      report[status]++;
      const node = ctx.tenant.index.get(result.id);
      if (!node) continue;
      const snap = issueSnapshot(issue);
      const record = newSyncRecord(link, node, issue, snap);
      await stores.sync.set(node.id, record);
      report.records++;
    }
  }
  return report;
}

/** The inbound event a link's first sync is queued as (not one GitHub sends). */
export const FIRST_SYNC_EVENT = 'first_sync';

/** The delivery id of a link's first sync: one per link, so queueing it twice runs it once. */
export const firstSyncDeliveryOf = (link: Pick<StoredLink, 'id'>) => `first-sync-${link.id}`;

/**
 * The first sync as a queued delivery (`FIRST_SYNC_EVENT`): the link operation queues it on the
 * tenant's inbound queue, so it is durable (a restart resumes it), retried with the queue's
 * backoff while GitHub is unreachable, answered by the link at once however many issues there
 * are, and ahead of the deliveries GitHub sends after the link (they then find the nodes it
 * made). It runs as the admin who made the link: the importer is an admin's operation.
 */
export const firstSyncHandler: GithubHandler = async (ctx) => {
  let report: FirstSyncReport;
  try {
    report = await firstSync(ctx.asPerson(ctx.link.created_by), ctx.link, ctx.map);
  } catch (err) {
    // GitHub refused the listing (a wrong token, no access to the repository): no retry helps,
    // and a queued retry would hold the deliveries behind it; the link's view shows the error.
    // An outage or a rate limit (no answer, 5xx, 429) is retried with the queue's backoff.
    const status = statusOf(err);
    if (status !== null && status >= 400 && status < 500 && status !== 429)
      throw new SvcError(422, 'github_refused', `first sync of ${ctx.link.repo}: GitHub answered ${status} listing the issues`);
    throw err;
  }
  ctx.log.info('github first sync done', {
    org: ctx.tenant.org,
    link: ctx.link.id,
    repo: ctx.link.repo,
    issues: report.issues,
    created: report.created,
    skipped: report.skipped,
    refused: report.refused.length,
  });
};
