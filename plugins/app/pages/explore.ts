/**
 * Programs (the overview and one gating tree with progress), analytics with charts, search,
 * and the picture of a node's neighborhood. Charts and the graph picture are drawn in the
 * browser by chart.js and cytoscape from JSON data blocks (never inline scripts).
 */
import { html, jsonBlock, layout, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import type { AnswerOf } from '../operations-bridge.js';
import type { getProgram } from '../../analytics/api.js';
import { nodeLink } from './queue.js';

type ProgramNode = AnswerOf<typeof getProgram>['blockers'][number];

function progressBar(pct: number, label: string): Html {
  return html`<progress max="100" value="${pct}" aria-label="${label}">${pct}%</progress> <span>${pct}%</span>`;
}

export async function showPrograms(_req: AppRequest, s: Signed): Promise<AppResult> {
  const overview = await s.bridge.exploreGraph({});
  // without arguments explore_graph answers the programs overview
  if (overview.mode !== 'programs') throw new Error(`explore_graph answered ${overview.mode} without arguments`);
  const body = html`<h1>Programs</h1>
${overview.programs.length === 0 ? html`<p class="muted">No programs yet: a program is a <code>proj-</code> grouping with work nodes in it.</p>` : ''}
<ul class="cards">${overview.programs.map(
    (p) => html`<li><h2><a href="/app/programs/${encodeURIComponent(p.id)}">${p.title}</a></h2>
<p class="muted small"><code>${p.id}</code> · ${p.status}</p>
<p>${progressBar(p.progress.pct, `${p.title} progress`)}</p>
<p class="small">${p.progress.done}/${p.progress.total} done · ${p.progress.active} active · ${p.progress.blocked} blocked · ${p.progress.open} open</p></li>`,
  )}</ul>
<p class="muted">Outside any program: ${overview.unscoped.total} work node(s). The gating tree of any node: open it and follow “Program tree”, or go to <code>/app/programs/&lt;id&gt;</code>.</p>`;
  return { html: layout({ title: 'Programs', viewer: s.viewer, nav: 'programs', flash: s.flash }, body) };
}

function tree(node: ProgramNode): Html {
  const kids = node.blockers ?? [];
  return html`<li><span class="phase phase-${node.phase}">${node.phase}</span> ${nodeLink(node.id, node.title)} <span class="muted small">${node.type} · ${node.status}${node.repeat ? ' · shown above' : ''}${node.edge?.needed_by ? ` · needed by ${node.edge.needed_by}` : ''}${node.more ? ` · ${node.more} more (cut by ${node.cut})` : ''}</span>
${kids.length ? html`<ul>${kids.map(tree)}</ul>` : ''}</li>`;
}

export async function showProgram(req: AppRequest, s: Signed): Promise<AppResult> {
  const p = await s.bridge.getProgram(req.params.id!, req.query.get('depth') ?? undefined);
  const pr = p.progress;
  const body = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/programs">Programs</a> › <code>${p.id}</code></nav>
<h1>${p.title}</h1>
<p>${nodeLink(p.id, 'Open the node')} · <span class="badge">${p.type}</span> <span class="badge status">${p.status}</span></p>
<p>${progressBar(pr.pct, 'Program progress')}</p>
<p>${pr.done}/${pr.total} done · ${pr.active} active · ${pr.blocked} blocked · ${pr.open} open</p>
<h2>Gating tree</h2>
${p.blockers.length === 0 ? html`<p class="muted">Nothing blocks this node.</p>` : html`<ul class="tree">${p.blockers.map(tree)}</ul>`}
${p.truncated.length ? html`<p class="muted">Cut: ${p.truncated.map((t) => `${t.id} (${t.reason}, ${t.skipped} skipped)`).join(', ')}</p>` : ''}`;
  return { html: layout({ title: `Program ${p.title}`, viewer: s.viewer, nav: 'programs', flash: s.flash }, body) };
}

export async function showAnalytics(req: AppRequest, s: Signed): Promise<AppResult> {
  const project = req.query.get('project') ?? '';
  const weeks = req.query.get('weeks') ?? '12';
  const a = await s.bridge.analytics({ project: project || undefined, weeks });
  // open work is every item not in a finished status (open, blocked, proposed too), not only the active
  // ones wip counts; a status is finished when a work type of the registry lists it as terminal
  const finished = new Set([...s.bridge.tenant.registry.nodeTypes.values()].filter((t) => t.queueable).flatMap((t) => t.terminal));
  const open = Object.entries(a.totals.by_status).filter(([st, n]) => n > 0 && !finished.has(st));
  const charts = {
    weekly: { labels: a.weekly.map((w) => w.week), created: a.weekly.map((w) => w.created), completed: a.weekly.map((w) => w.completed) },
    wip: { labels: open.map(([st]) => st), values: open.map(([, n]) => n) },
  };
  const body = html`<h1>Analytics</h1>
<form method="get" action="/app/analytics" class="filters" aria-label="Analytics scope">
<label>Project <input name="project" value="${project}" placeholder="all" size="12"></label>
<label>Weeks <input name="weeks" type="number" min="1" max="52" value="${weeks}"></label>
<button type="submit">Show</button></form>
${a.project_warning ? html`<p class="flash error" role="alert">${a.project_warning}</p>` : ''}
<div class="stats">
<div><strong>${a.throughput.completed}</strong><span>completed in ${a.window.weeks} weeks</span></div>
<div><strong>${a.throughput.weekly_mean}</strong><span>per week</span></div>
<div><strong>${a.cycleTimeDays.started_median ?? '–'}</strong><span>median cycle time (days) of ${a.cycleTimeDays.started} item(s) started and finished</span></div>
<div><strong>${a.wip.count}</strong><span>in progress</span></div>
</div>
<div class="charts">
<figure><figcaption id="weekly-cap">Created and completed per week</figcaption><div class="chart-box"><canvas id="chart-weekly" role="img" aria-labelledby="weekly-cap"></canvas></div></figure>
<figure><figcaption id="wip-cap">Open work by status</figcaption><div class="chart-box"><canvas id="chart-wip" role="img" aria-labelledby="wip-cap"></canvas></div></figure>
</div>
<h2>Weekly numbers</h2>
<div class="table-wrap"><table><caption class="sr-only">Created and completed per week</caption><thead><tr><th scope="col">Week</th><th scope="col">Created</th><th scope="col">Completed</th></tr></thead>
<tbody>${a.weekly.map((w) => html`<tr><td>${w.week}</td><td>${w.created}</td><td>${w.completed}</td></tr>`)}</tbody></table></div>
${a.wip.aging.length ? html`<h2>Aging work</h2><ul class="plain">${a.wip.aging.map((w) => html`<li>${nodeLink(w.id, w.title)} <span class="muted small">${w.type}</span></li>`)}</ul>` : ''}
${jsonBlock('chart-data', charts)}`;
  return {
    html: layout(
      {
        title: 'Analytics',
        viewer: s.viewer,
        nav: 'analytics',
        flash: s.flash,
        scripts: ['/app/static/vendor/chart.umd.min.js', '/app/static/analytics.js'],
      },
      body,
    ),
  };
}

export async function showSearch(req: AppRequest, s: Signed): Promise<AppResult> {
  const query = (req.query.get('q') ?? '').slice(0, 2000);
  const result = query.trim() ? await s.bridge.queryGraph(query) : null;
  const index = s.bridge.tenant.index;
  const body = html`<h1>Search</h1>
<form method="get" action="/app/search" class="filters" role="search">
<label for="q">Search summaries and bodies</label> <input id="q" name="q" type="search" value="${query}" size="40">
<button type="submit">Search</button></form>
${
  result
    ? result.node_ids.length === 0
      ? html`<p role="status">No match for “${query}”.</p>`
      : html`<p role="status" class="muted">${result.node_ids.length} result(s), best similarity ${result.top_sim}.</p>
<ol class="results">${result.node_ids.map((id) => {
          const r = index.get(id);
          return r
            ? html`<li>${nodeLink(id, r.title)} <span class="muted small">${r.type} · ${r.status}</span><p class="small">${String(r.frontmatter.summary ?? '')}</p></li>`
            : '';
        })}</ol>`
    : ''
}`;
  return { html: layout({ title: query ? `Search: ${query}` : 'Search', viewer: s.viewer, nav: 'search', flash: s.flash }, body) };
}

export async function showGraph(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const depth = req.query.get('depth') === '2' ? 2 : 1;
  const n = await s.bridge.exploreGraph({ root_id: id, depth });
  if (n.mode !== 'neighborhood') throw new Error(`explore_graph answered ${n.mode} for root_id`);
  const elements = [
    ...n.nodes.map((x) => ({
      data: {
        id: x.id,
        label: x.title.length > 40 ? `${x.title.slice(0, 39)}…` : x.title,
        type: x.type,
        status: x.status,
        root: x.id === id,
        done: x.done,
      },
    })),
    ...n.edges.map((e, i) => ({ data: { id: `e${i}`, source: e.from, target: e.to, label: e.type } })),
  ];
  const body = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/nodes/${encodeURIComponent(id)}">${id}</a> › neighborhood</nav>
<h1>Neighborhood of ${n.nodes[0]?.title ?? id}</h1>
<p>Depth: ${depth === 1 ? html`<strong>1</strong> · <a href="?depth=2">2</a>` : html`<a href="?depth=1">1</a> · <strong>2</strong>`}
 · ${n.nodes.length} node(s), ${n.edges.length} edge(s)${n.truncated ? ' (truncated)' : ''}</p>
<div id="graph" class="graph" role="img" aria-label="Graph of ${n.nodes.length} nodes around ${id}; the same nodes are listed below"></div>
<ul class="legend" aria-label="Colour legend"><li><span class="swatch root"></span>this node</li><li><span class="swatch other"></span>open or in progress</li><li><span class="swatch done"></span>finished (a terminal status)</li><li><span class="swatch edge"></span>an edge, labelled with its type</li></ul>
<h2>Nodes in the picture</h2>
<ul class="plain">${n.nodes.map((x) => html`<li>${nodeLink(x.id, x.title)} <span class="muted small">${x.type} · ${x.status} · ${x.distance} hop(s)</span></li>`)}</ul>
${jsonBlock('graph-data', { elements, root: id })}`;
  return {
    html: layout(
      {
        title: `Neighborhood of ${id}`,
        viewer: s.viewer,
        flash: s.flash,
        scripts: ['/app/static/vendor/cytoscape.min.js', '/app/static/graph.js'],
      },
      body,
    ),
  };
}
