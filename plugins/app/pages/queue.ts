/**
 * My queue: GET /v1/queue's ranked items with their `why` and `suggest`, its sections
 * (questions, asked, findings, pending, reviews), filters and offset paging.
 */
import { html, layout, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { namesIn } from './words.js';

export const QUEUE_PAGE_SIZE = 50;
const SECTIONS = ['questions', 'asked', 'findings', 'pending', 'reviews'] as const;
const SECTION_TITLES: Record<(typeof SECTIONS)[number], string> = {
  questions: 'Questions for me',
  asked: 'Questions I asked',
  findings: 'Findings',
  pending: 'Pending captures',
  reviews: 'Reviews requested',
};

interface SectionEntry {
  id: string;
  title: string;
  type: string;
  status: string;
}

export const nodeLink = (id: string, title?: string): Html => html`<a href="/app/nodes/${encodeURIComponent(id)}">${title ?? id}</a>`;

function option(value: string, label: string, selected: string): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
}

export async function showQueue(req: AppRequest, s: Signed): Promise<AppResult> {
  const q = req.query;
  const filters = {
    project: q.get('project') ?? '',
    type: q.get('type') ?? '',
    readiness: q.get('readiness') ?? '',
    assignee: q.get('assignee') ?? '',
  };
  const offset = q.get('offset') ?? '0';
  const queue = await s.bridge.showQueue({
    project: filters.project || undefined,
    type: filters.type || undefined,
    readiness: filters.readiness || undefined,
    assignee: filters.assignee || undefined,
    limit: String(QUEUE_PAGE_SIZE),
    offset,
  });
  const types = [...s.bridge.tenant.registry.nodeTypes.values()]
    .filter((t) => t.queueable)
    .map((t) => t.type)
    .sort();
  const pageLink = (to: number) => {
    const p = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ''));
    p.set('offset', String(to));
    return `/app/queue?${p}`;
  };
  const first = queue.total_count === 0 ? 0 : queue.offset + 1;
  const last = queue.offset + queue.returned_count;
  const sections = SECTIONS.map((name) => ({ name, entries: (queue[name] as SectionEntry[]) ?? [] })).filter((x) => x.entries.length > 0);
  const body = html`<h1>My queue</h1>
<form method="get" action="/app/queue" class="filters" aria-label="Filter the queue">
<label>Project <input name="project" value="${filters.project}" placeholder="any" size="12"></label>
<label>Type <select name="type">${option('', 'any', filters.type)}${types.map((t) => option(t, t, filters.type))}</select></label>
<label>Readiness <select name="readiness">${option('', 'any', filters.readiness)}${['agent', 'human', 'untriaged'].map((r) => option(r, r, filters.readiness))}</select></label>
<label>Assignee <select name="assignee">${option('', 'anyone', filters.assignee)}${option('me', 'me', filters.assignee)}${s.bridge
    .people()
    .filter((p) => p.id !== s.viewer.personId)
    .map((p) => option(p.id, p.name, filters.assignee))}</select></label>
<button type="submit">Filter</button> <a href="/app/queue">Clear</a>
</form>
<div data-live="queue">
<p class="muted" role="status">${queue.total_count === 0 ? 'Nothing to do here.' : `Items ${first}-${last} of ${queue.total_count}`}${queue.muted ? ` · ${queue.muted} muted` : ''}${queue.dormant ? ` · ${queue.dormant} dormant` : ''}
 · ${Object.entries(queue.counts_by_suggest)
   .filter(([, n]) => n > 0)
   .map(([k, n]) => `${n} ${k}`)
   .join(', ')}</p>
${
  queue.items.length > 0
    ? html`<div class="table-wrap"><table class="queue">
<caption class="sr-only">Ranked work items</caption>
<thead><tr><th scope="col">#</th><th scope="col">Item</th><th scope="col">Suggest</th><th scope="col">Why</th><th scope="col">Status</th><th scope="col">Priority</th><th scope="col">Ready for</th></tr></thead>
<tbody>${queue.items.map(
        (item, i) => html`<tr>
<td>${queue.offset + i + 1}</td>
<td>${nodeLink(item.id, item.title)}<div class="muted small"><code>${item.id}</code>${item.project ? ` · ${item.project}` : ''}${item.lease ? ` · held by ${s.bridge.tenant.index.get(item.lease.by)?.title ?? item.lease.by}` : ''}</div></td>
<td><span class="suggest suggest-${item.suggest}">${item.suggest}</span></td>
<td class="why">${namesIn(s, item.why)}</td>
<td>${item.status}</td>
<td>${item.priority ?? ''}</td>
<td>${item.readiness ?? ''}</td>
</tr>`,
      )}</tbody></table></div>`
    : ''
}
<nav class="pager" aria-label="Queue pages">
${queue.offset > 0 ? html`<a href="${pageLink(Math.max(0, queue.offset - QUEUE_PAGE_SIZE))}" rel="prev">Previous page</a>` : ''}
${queue.next_offset !== null ? html`<a href="${pageLink(queue.next_offset)}" rel="next">Next page</a>` : ''}
</nav>
${sections.map(
  (
    sec,
  ) => html`<section aria-labelledby="sec-${sec.name}"><h2 id="sec-${sec.name}">${SECTION_TITLES[sec.name]} (${queue.section_totals?.[sec.name] ?? sec.entries.length})</h2>
<ul class="plain">${sec.entries.map((e) => html`<li>${nodeLink(e.id, e.title)} <span class="muted small">${e.type} · ${e.status}</span></li>`)}</ul></section>`,
)}
</div>`;
  // any event may move the ranking (a claim, a status, an edge): the page listens to all of the project's, or the tenant's
  const live = new URLSearchParams(filters.project ? { project: filters.project } : {}).toString();
  return { html: layout({ title: 'My queue', viewer: s.viewer, nav: 'queue', flash: s.flash, live }, body) };
}
