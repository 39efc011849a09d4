/**
 * The board (issue 25 item 3): a project's work items as cards in columns, one column per
 * status of the shown types in the registry's order, with a WIP count on each. Filters
 * (type, assignee, priority) are query parameters, so a board view is a link.
 *
 * A card moves through set_status with the revision the board was drawn from: a POST form
 * per card that works without script (a "Move to" choice of the statuses the registry allows
 * from the card's current one), enhanced by static/board.js into drag and drop and in-place
 * moves over fetch. A stale card is a 409 that names who changed it and to what; a move the
 * schema refuses comes back as a message on the card. The move's answer always carries the
 * card as it now is, so the board the person sees stays consistent with the graph.
 */
import type { NodeRecord } from '../../../kernel/graph-index.js';
import { errors, isSvcError, type SvcError } from '../../../kernel/errors.js';
import { resolveScope } from '../../core/public.js';
import { csrfField, html, layout, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';

const SLUG = /^[a-z0-9][a-z0-9-]{0,99}$/;
const PRIORITIES = ['p1', 'p2', 'p3'] as const;
const PRIORITY_RANK: Record<string, number> = { p1: 0, p2: 1, p3: 2 };

export interface BoardFilters {
  project: string;
  type: string;
  /** `me`, `none` (nobody assigned) or a person id */
  assignee: string;
  /** p1-p3, or `none` (no priority) */
  priority: string;
}

/** What a card says about a move that did not happen (or did). */
interface CardNotice {
  kind: 'ok' | 'error';
  text: string;
}

/** The work types a board shows: the registry's queueable ones (task, issue, dec in the seed pack). */
function boardTypes(s: Signed): string[] {
  return [...s.bridge.tenant.registry.nodeTypes.values()].filter((t) => t.queueable).map((t) => t.type);
}

/** The filters of the address, checked: a value the board cannot mean is a 422 page (as the queue's filters), never an empty board that looks right. */
export function parseFilters(s: Signed, query: URLSearchParams): BoardFilters {
  const f: BoardFilters = {
    project: (query.get('project') ?? '').trim(),
    type: query.get('type') ?? '',
    assignee: query.get('assignee') ?? '',
    priority: query.get('priority') ?? '',
  };
  const bad = (field: string, message: string) => errors.validation(message, [{ field, message }]);
  if (f.project && !SLUG.test(f.project))
    throw bad('project', `'${f.project}' is not a project name (lowercase letters, digits and dashes)`);
  if (f.type && !boardTypes(s).includes(f.type))
    throw bad('type', `the board shows work types only (${boardTypes(s).join(', ')}), not '${f.type}'`);
  if (f.priority && f.priority !== 'none' && !(PRIORITIES as readonly string[]).includes(f.priority))
    throw bad('priority', `priority is p1, p2, p3 or none, not '${f.priority}'`);
  if (f.assignee && f.assignee !== 'me' && f.assignee !== 'none' && s.bridge.tenant.index.get(f.assignee)?.type !== 'person')
    throw bad('assignee', `'${f.assignee}' is not a person of this tenant`);
  return f;
}

/** The board's address for these filters (empty ones left out). */
export function boardHref(f: BoardFilters): string {
  const p = new URLSearchParams(Object.entries(f).filter(([, v]) => v !== ''));
  const q = p.toString();
  return q ? `/app/board?${q}` : '/app/board';
}

const assigneesOf = (r: NodeRecord): string[] => r.edges.filter((e) => e.type === 'assigned').map((e) => e.to);
const priorityOf = (r: NodeRecord): string => (typeof r.frontmatter.priority === 'string' ? r.frontmatter.priority : '');

/** The work items of the project (its repos and groupings too, as the queue scopes a project), narrowed by the filters. */
function cardsOf(s: Signed, f: BoardFilters): NodeRecord[] {
  const index = s.bridge.tenant.index;
  const types = new Set(f.type ? [f.type] : boardTypes(s));
  const me = s.viewer.personId;
  const ids = new Set<string>();
  for (const value of resolveScope(s.bridge.tenant, f.project).values) for (const id of index.idsInProject(value)) ids.add(id);
  const out: NodeRecord[] = [];
  for (const id of ids) {
    const r = index.get(id);
    if (!r || !types.has(r.type)) continue;
    const who = assigneesOf(r);
    if (f.assignee === 'none' ? who.length > 0 : f.assignee && !who.includes(f.assignee === 'me' ? me : f.assignee)) continue;
    const prio = priorityOf(r);
    if (f.priority === 'none' ? prio !== '' : f.priority && prio !== f.priority) continue;
    out.push(r);
  }
  // p1 first, then by title: the order a stand-up reads a column in
  return out.sort((a, b) => (PRIORITY_RANK[priorityOf(a)] ?? 3) - (PRIORITY_RANK[priorityOf(b)] ?? 3) || a.title.localeCompare(b.title));
}

/**
 * The columns: the statuses of the shown types in the registry's order, open ones before
 * finished ones (with task and issue together: open, in-progress, blocked, review, then done,
 * cancelled, resolved, wontfix), so work flows left to right.
 */
function columnsOf(s: Signed, typeNames: string[]): Array<{ status: string; terminal: boolean }> {
  const registry = s.bridge.tenant.registry;
  const open: string[] = [];
  const done: string[] = [];
  for (const name of typeNames) {
    const t = registry.nodeTypes.get(name);
    if (!t) continue;
    for (const st of t.statuses) {
      const list = t.terminal.includes(st) ? done : open;
      if (!open.includes(st) && !done.includes(st)) list.push(st);
    }
  }
  return [...open.map((status) => ({ status, terminal: false })), ...done.map((status) => ({ status, terminal: true }))];
}

/** The statuses the registry lets this card move to from where it is (its type's moves). */
function movesOf(s: Signed, r: NodeRecord): string[] {
  const t = s.bridge.tenant.registry.nodeTypes.get(r.type);
  if (!t) return [];
  return (t.moves[r.status] ?? t.statuses).filter((st) => st !== r.status);
}

const personName = (s: Signed, id: string): string => (id === s.viewer.personId ? 'you' : (s.bridge.tenant.index.get(id)?.title ?? id));

/** One card: its link, badges, assignee, and the move form (the keyboard and no-script way). */
export function renderCard(s: Signed, r: NodeRecord, f: BoardFilters, notice?: CardNotice): Html {
  const moves = movesOf(s, r);
  const who = assigneesOf(r);
  const prio = priorityOf(r);
  const domId = `card-${r.id}`;
  return html`<li class="card${notice?.kind === 'error' ? ' has-error' : ''}" id="${domId}" draggable="${moves.length ? 'true' : 'false'}" data-id="${r.id}" data-status="${r.status}" data-moves="${moves.join(' ')}" aria-labelledby="${domId}-t">
<p class="card-title" id="${domId}-t"><a href="/app/nodes/${encodeURIComponent(r.id)}">${r.title}</a></p>
<p class="card-meta small">${f.type ? '' : html`<span class="badge">${r.type}</span> `}${prio ? html`<span class="badge prio-${prio}">${prio}</span> ` : ''}<span class="assignee">${who.length ? who.map((p) => personName(s, p)).join(', ') : html`<span class="muted">unassigned</span>`}</span></p>
${notice ? html`<p class="card-notice ${notice.kind}">${notice.text}</p>` : ''}
${
  moves.length
    ? html`<form method="post" action="/app/board/move?${new URLSearchParams(Object.entries(f).filter(([, v]) => v !== ''))}" class="card-move">${csrfField(s.viewer.csrf)}
<input type="hidden" name="id" value="${r.id}"><input type="hidden" name="revision" value="${r.revision}">
<select name="status" aria-label="Move ${r.title} to">${moves.map((m) => html`<option value="${m}">${m}</option>`)}</select>
<button type="submit" class="small-btn">Move</button></form>`
    : ''
}
</li>`;
}

function option(value: string, label: string, selected: string): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
}

/** The projects with work on them, for the chooser: the project value, its node's title when it names one, and the count. */
function projectsWithWork(s: Signed): Array<{ value: string; title: string; count: number }> {
  const index = s.bridge.tenant.index;
  const types = new Set(boardTypes(s));
  const out: Array<{ value: string; title: string; count: number }> = [];
  for (const value of index.projects()) {
    let count = 0;
    for (const id of index.idsInProject(value)) if (types.has(index.get(id)?.type ?? '')) count++;
    if (count > 0) out.push({ value, title: index.get(value)?.title ?? value, count });
  }
  return out.sort((a, b) => a.title.localeCompare(b.title));
}

function chooser(s: Signed): Html {
  const projects = projectsWithWork(s);
  return html`<h1>Board</h1>
<p>Choose a project: its work items are shown as cards in one column per status.</p>
${
  projects.length
    ? html`<ul class="plain project-list">${projects.map(
        (p) =>
          html`<li><a href="${boardHref({ project: p.value, type: '', assignee: '', priority: '' })}">${p.title}</a> <span class="muted small"><code>${p.value}</code> · ${p.count} item(s)</span></li>`,
      )}</ul>`
    : html`<p class="muted">No project has work items yet: a work item joins a project through its <code>project</code> field.</p>`
}`;
}

/** The whole board page; `notices` puts a message on a card (after a move without script). */
function boardPage(s: Signed, f: BoardFilters, notices: Map<string, CardNotice> = new Map()): Html {
  const index = s.bridge.tenant.index;
  const cards = cardsOf(s, f);
  const shownTypes = f.type ? [f.type] : boardTypes(s).filter((t) => cards.some((c) => c.type === t));
  const columns = columnsOf(s, shownTypes.length ? shownTypes : boardTypes(s).slice(0, 1));
  const byStatus = new Map<string, NodeRecord[]>(columns.map((c) => [c.status, []]));
  for (const c of cards) {
    // a status outside the shown columns (a type whose schema dropped it) still shows, in its own column
    if (!byStatus.has(c.status)) {
      byStatus.set(c.status, []);
      columns.push({ status: c.status, terminal: false });
    }
    byStatus.get(c.status)!.push(c);
  }
  const people = new Set<string>();
  for (const id of resolveScope(s.bridge.tenant, f.project).values)
    for (const n of index.idsInProject(id)) for (const p of assigneesOf(index.get(n)!)) people.add(p);
  if (f.assignee && f.assignee !== 'me' && f.assignee !== 'none') people.add(f.assignee);
  people.delete(s.viewer.personId);
  const personOptions = [...people].map((p) => ({ id: p, name: index.get(p)?.title ?? p })).sort((a, b) => a.name.localeCompare(b.name));
  const title = index.get(f.project)?.title ?? f.project;
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/board">Board</a> › <code>${f.project}</code></nav>
<h1>Board: ${title}</h1>
<form method="get" action="/app/board" class="filters" aria-label="Filter the board">
<input type="hidden" name="project" value="${f.project}">
<label>Type <select name="type">${option('', 'any work type', f.type)}${boardTypes(s).map((t) => option(t, t, f.type))}</select></label>
<label>Assignee <select name="assignee">${option('', 'anyone', f.assignee)}${option('me', 'me', f.assignee)}${option('none', 'nobody', f.assignee)}${personOptions.map((p) => option(p.id, p.name, f.assignee))}</select></label>
<label>Priority <select name="priority">${option('', 'any', f.priority)}${PRIORITIES.map((p) => option(p, p, f.priority))}${option('none', 'none', f.priority)}</select></label>
<button type="submit">Filter</button> <a href="${boardHref({ project: f.project, type: '', assignee: '', priority: '' })}">Clear</a>
</form>
<p class="muted small" id="board-help">${cards.length} card(s). Drag a card to a highlighted column, or choose a status on the card and press Move. Only the moves its type allows are offered.</p>
<p id="board-status" class="sr-only" role="status" aria-live="polite"></p>
<div class="board" id="board">
${columns.map((c) => {
  const list = byStatus.get(c.status) ?? [];
  const hid = `col-${c.status}`;
  return html`<section class="column${c.terminal ? ' terminal' : ''}" data-status="${c.status}" aria-labelledby="${hid}">
<h2 id="${hid}"><span class="col-name">${c.status}</span> <span class="wip" data-wip="${c.status}" title="cards in ${c.status}">${list.length}</span><span class="sr-only"> card(s)</span></h2>
<ul class="cards-list">${list.map((r) => renderCard(s, r, f, notices.get(r.id)))}</ul>
</section>`;
})}
</div>`;
}

export async function showBoard(req: AppRequest, s: Signed): Promise<AppResult> {
  const f = parseFilters(s, req.query);
  if (!f.project) return { html: layout({ title: 'Board', viewer: s.viewer, nav: 'board', flash: s.flash }, chooser(s)) };
  return {
    html: layout(
      { title: `Board ${f.project}`, viewer: s.viewer, nav: 'board', flash: s.flash, scripts: ['/app/static/board.js'] },
      boardPage(s, f),
    ),
  };
}

/** Who made the newest change to the node, for the 409 message (from its history when the tenant keeps it). */
async function lastChanger(s: Signed, id: string): Promise<string | null> {
  if (!s.bridge.has('history')) return null;
  const last = (await s.bridge.getNodeHistory(id, 1)).history[0];
  if (!last) return null;
  return last.actor === s.viewer.personId ? 'You (in another window)' : String(last.actor_name ?? last.actor);
}

/** The words on the card for a refused move: what happened and what the person can do now. */
async function refusal(s: Signed, id: string, wanted: string, err: SvcError, now: NodeRecord): Promise<string> {
  const allowed = movesOf(s, now);
  const choices = allowed.length ? `From ${now.status} it can move to ${allowed.join(', ')}.` : `It cannot move from ${now.status}.`;
  if (err.code === 'conflict' && 'current_revision' in err.details) {
    const who = (await lastChanger(s, id)) ?? 'Someone else';
    return `${who} changed this card after the board was loaded: it is now in ${now.status}. Your move to ${wanted} was not made; the card shows their version, move it again if you still mean to.`;
  }
  if (err.code === 'transition_denied') return `Cannot move to ${wanted}: ${err.message}. ${choices}`;
  if (err.code === 'lease_held' || err.code === 'conflict') return `Not moved to ${wanted}: ${err.message}.`;
  return `Not moved to ${wanted}: ${err.message}`;
}

/**
 * POST /app/board/move (id, status, revision; the board's filters in the query): set_status
 * with the revision echo. A fetch from board.js (Accept: application/json) gets the card as
 * it now is (HTML) and its column; a form post without script gets the board again.
 */
export async function moveCard(req: AppRequest, s: Signed): Promise<AppResult> {
  const wantsJson = (req.headers.accept ?? '').includes('application/json');
  const f = parseFilters(s, req.query);
  const id = (req.form.get('id') ?? '').trim();
  const status = (req.form.get('status') ?? '').trim();
  const revision = (req.form.get('revision') ?? '').trim();
  const json = (code: number, data: Record<string, unknown>): AppResult => ({
    status: code,
    body: JSON.stringify(data),
    type: 'application/json',
  });
  // an incomplete form or a card that is not a work item: the error itself (JSON for board.js), nothing written
  const refuse = (err: SvcError): AppResult => {
    if (wantsJson) return json(err.status, { ok: false, ...err.envelope() });
    throw err;
  };
  if (!id || !status || !revision)
    return refuse(
      errors.validation('a move names the card (id), the new status and the revision the board showed', [
        { field: !id ? 'id' : !status ? 'status' : 'revision', message: 'required' },
      ]),
    );
  const card = s.bridge.tenant.index.get(id);
  if (!card || !boardTypes(s).includes(card.type)) return refuse(errors.notFound(`work item ${id}`));
  let notice: CardNotice;
  let code = 200;
  try {
    const result = await s.bridge.setStatus(id, status, revision);
    const released = result.warnings.some((w) => /lease .*released/.test(w));
    notice = {
      kind: 'ok',
      text: `Moved to ${status}${result.status === 'skipped' ? ' (it was already there)' : ''}${released ? '; your lease was released' : ''}.`,
    };
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    code = err.status;
    notice = { kind: 'error', text: await refusal(s, id, status, err, s.bridge.tenant.index.get(id) ?? card) };
  }
  // the card as it is now (moved, or where the other change put it); a node removed meanwhile keeps the last one seen
  const now = s.bridge.tenant.index.get(id) ?? card;
  if (wantsJson) {
    return json(code, {
      ok: code === 200,
      id,
      status: now.status,
      message: notice.text,
      card: renderCard(s, now, f, notice).text,
    });
  }
  if (code === 200) {
    s.setFlash('ok', `${now.title}: ${notice.text}`);
    return { redirect: boardHref(f.project ? f : { ...f, project: now.project ?? '' }) };
  }
  const page = f.project
    ? boardPage(s, f, new Map([[id, notice]]))
    : html`<h1>Board</h1><p><a href="${boardHref({ ...f, project: now.project ?? '' })}">Back to the board</a></p>`;
  return {
    status: code,
    html: layout(
      { title: 'Board', viewer: s.viewer, nav: 'board', flash: { kind: 'error', text: notice.text }, scripts: ['/app/static/board.js'] },
      page,
    ),
  };
}
