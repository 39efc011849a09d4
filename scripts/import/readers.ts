/**
 * Source readers: beads JSONL, a Backlog.md `backlog/` folder, and `gh issue list --json` output,
 * each turned into the normalized items of POST /v1/import (plugins/import/model.ts). The
 * mapping of each source is documented in docs/import.md. Readers are tolerant of other versions
 * of the same formats: unknown fields are ignored, unknown types and statuses fall back to a
 * documented default (kept as a label), tombstones are skipped and counted.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { ImportItem, ImportPerson } from '../../plugins/import/model.js';

export interface ReadResult {
  source: string;
  items: ImportItem[];
  /** tombstoned or deleted items skipped */
  deleted: number;
  /** what the reader could not carry over (dangling dependencies, unreadable files) */
  warnings: string[];
}

type Json = Record<string, unknown>;
type Edge = NonNullable<ImportItem['edges']>[number];

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined || v === null || v === '' ? [] : [v]);

/** Adds the edges collected per source id to their items; edges to items not in the export are dropped and reported. */
function attachEdges(items: ImportItem[], pending: Array<{ from: string; edge: Omit<Edge, 'to_type'> }>, warnings: string[]): void {
  const byId = new Map(items.map((i) => [i.source_id, i]));
  for (const { from, edge } of pending) {
    const source = byId.get(from);
    const target = byId.get(edge.to);
    if (!source || !target) {
      warnings.push(`dropped ${edge.type} edge ${from} -> ${edge.to}: ${!source ? from : edge.to} is not in the export`);
      continue;
    }
    if (from === edge.to) continue;
    const edges = (source.edges ??= []);
    if (!edges.some((e) => e.type === edge.type && e.to === edge.to)) edges.push({ ...edge, to_type: target.type });
  }
}

// ---------------------------------------------------------------- beads

const BEADS_PRIORITY: Record<number, 'p1' | 'p2' | 'p3'> = { 0: 'p1', 1: 'p1', 2: 'p2', 3: 'p3', 4: 'p3' };
const NOT_DONE = /won'?t ?(do|fix)|not planned|invalid|duplicate|obsolete|cancel/i;

function beadsStatus(type: string, status: string, closeReason: string | undefined): { status: string; label?: string } {
  const issue = type === 'issue';
  switch (status) {
    case 'open':
      return { status: 'open' };
    case 'in_progress':
    case 'hooked':
      return { status: 'in-progress', ...(status === 'hooked' ? { label: 'hooked' } : {}) };
    case 'blocked':
      return { status: 'blocked' };
    case 'closed':
      if (closeReason && NOT_DONE.test(closeReason)) return { status: issue ? 'wontfix' : 'cancelled' };
      return { status: issue ? 'resolved' : 'done' };
    default:
      // pinned, deferred and statuses of later versions: still open work, the original kept as a label
      return { status: 'open', label: status };
  }
}

function beadsBody(o: Json): string {
  const parts: string[] = [];
  if (str(o.description)) parts.push(String(o.description).trimEnd());
  for (const [key, heading] of [
    ['design', 'Design'],
    ['acceptance_criteria', 'Acceptance criteria'],
    ['notes', 'Notes'],
  ] as const) {
    if (str(o[key])) parts.push(`## ${heading}\n\n${String(o[key]).trimEnd()}`);
  }
  return parts.length > 0 ? parts.join('\n\n') + '\n' : '';
}

export function readBeads(file: string): ReadResult {
  const warnings: string[] = [];
  const items: ImportItem[] = [];
  const pending: Array<{ from: string; edge: Omit<Edge, 'to_type'> }> = [];
  let deleted = 0;
  const lines = readFileSync(file, 'utf8').split('\n');
  for (const [n, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let o: Json;
    try {
      o = JSON.parse(line) as Json;
    } catch {
      warnings.push(`line ${n + 1}: not JSON, skipped`);
      continue;
    }
    const id = str(o.id);
    if (!id || !str(o.title)) {
      warnings.push(`line ${n + 1}: no id or title, skipped`);
      continue;
    }
    if (o.status === 'tombstone' || o.deleted_at || o.deleted === true) {
      deleted++;
      continue;
    }
    const sourceType = str(o.issue_type) ?? 'task';
    const type = sourceType === 'bug' ? 'issue' : 'task';
    const closeReason = str(o.close_reason);
    const mapped = beadsStatus(type, String(o.status ?? 'open'), closeReason);
    const labels = [...list(o.labels).map(String)];
    if (!['task', 'bug'].includes(sourceType)) labels.push(sourceType); // epic, feature, chore, ... kept
    if (mapped.label) labels.push(mapped.label);
    const assignees: ImportPerson[] = str(o.assignee) ? [{ name: String(o.assignee) }] : [];
    const owner = str(o.owner);
    const priority = typeof o.priority === 'number' ? BEADS_PRIORITY[o.priority] : undefined;
    items.push({
      source_id: id,
      type,
      title: String(o.title),
      body: beadsBody(o),
      status: mapped.status,
      ...(closeReason && mapped.status !== 'open' ? { close_reason: closeReason } : {}),
      ...(priority ? { priority } : {}),
      ...(labels.length > 0 ? { labels: [...new Set(labels)] } : {}),
      ...(assignees.length > 0 ? { assignees } : {}),
      ...(owner ? { owner: owner.includes('@') ? { email: owner, name: owner.split('@')[0] } : { name: owner } } : {}),
      ...(str(o.created_at) ? { created_at: String(o.created_at) } : {}),
      ...(str(o.updated_at) ? { updated_at: String(o.updated_at) } : {}),
      ...(str(o.closed_at) ? { closed_at: String(o.closed_at) } : {}),
      fields: { source_priority: typeof o.priority === 'number' ? `P${o.priority}` : null, source_type: sourceType },
    });
    let hasParent = false;
    for (const dep of list(o.dependencies) as Json[]) {
      const target = str(dep.depends_on_id);
      if (!target) continue;
      switch (dep.type) {
        case 'blocks': // this issue waits for the target: the target blocks it
          pending.push({ from: target, edge: { type: 'blocks', to: id } });
          break;
        case 'parent-child':
          hasParent = true;
          pending.push({ from: id, edge: { type: 'part-of', to: target } });
          break;
        case 'supersedes':
          pending.push({ from: id, edge: { type: 'supersedes', to: target } });
          break;
        case 'duplicates': // the canonical item supersedes its duplicate
          pending.push({ from: target, edge: { type: 'supersedes', to: id, attrs: { kind: 'duplicate' } } });
          break;
        default: // related, discovered-from, tracks, relates_to and later kinds
          pending.push({
            from: id,
            edge: { type: 'relates-to', to: target, attrs: { kind: String(dep.type ?? 'related').replace(/[^A-Za-z0-9_-]/g, '-') } },
          });
      }
    }
    if (!hasParent && str(o.parent)) pending.push({ from: id, edge: { type: 'part-of', to: String(o.parent) } });
  }
  attachEdges(items, pending, warnings);
  return { source: 'beads', items, deleted, warnings };
}

// ---------------------------------------------------------------- Backlog.md

const BACKLOG_PRIORITY: Record<string, 'p1' | 'p2' | 'p3'> = { high: 'p1', medium: 'p2', low: 'p3' };

/** Backlog.md frontmatter is YAML, except that `assignee: @name` (a reserved indicator) occurs unquoted. */
function parseBacklogFile(path: string): { fm: Json; body: string } | null {
  const text = readFileSync(path, 'utf8');
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!m) return null;
  const yaml = m[1]!.replace(
    /^(\s*(?:-|[\w-]+:)\s*)(@[^\n]*)$/gm,
    (_all, lead: string, value: string) => `${lead}${JSON.stringify(value.trim())}`,
  );
  try {
    const fm = parseYaml(yaml) as unknown;
    if (!fm || typeof fm !== 'object' || Array.isArray(fm)) return null;
    return { fm: fm as Json, body: m[2] ?? '' };
  } catch {
    return null;
  }
}

function backlogStatus(raw: string | undefined, folder: string): string {
  if (folder === 'completed') return 'done';
  if (folder === 'archive/tasks') return 'cancelled';
  const s = (raw ?? '').toLowerCase();
  if (/won'?t|cancel|drop|reject/.test(s)) return 'cancelled';
  if (/done|complete|closed|finished/.test(s)) return 'done';
  if (/review/.test(s)) return 'review';
  if (/progress|doing|active|started/.test(s)) return 'in-progress';
  if (/block/.test(s)) return 'blocked';
  return 'open';
}

const backlogPerson = (v: unknown): ImportPerson | null => {
  const s = str(v)?.trim().replace(/^@/, '');
  if (!s) return null;
  return s.includes('@') ? { email: s, name: s.split('@')[0] } : { name: s };
};

const backlogDate = (v: unknown): string | undefined => {
  if (v instanceof Date) return v.toISOString();
  return str(v)?.trim();
};

export function readBacklog(dir: string): ReadResult {
  const root = existsSync(join(dir, 'backlog')) && statSync(join(dir, 'backlog')).isDirectory() ? join(dir, 'backlog') : dir;
  const warnings: string[] = [];
  const items: ImportItem[] = [];
  const pending: Array<{ from: string; edge: Omit<Edge, 'to_type'> }> = [];
  let deleted = 0;
  const files = (sub: string) => {
    const path = join(root, sub);
    if (!existsSync(path) || !statSync(path).isDirectory()) return [];
    return readdirSync(path)
      .filter((n) => n.endsWith('.md') && n.toLowerCase() !== 'readme.md')
      .sort()
      .map((n) => join(path, n));
  };
  let taskPrefix = 'task';
  const config = join(root, 'config.yml');
  if (existsSync(config)) {
    try {
      const cfg = parseYaml(readFileSync(config, 'utf8')) as Json;
      if (str(cfg.task_prefix)) taskPrefix = String(cfg.task_prefix).toLowerCase();
      if (str(cfg.project_name)) warnings.push(`project: ${String(cfg.project_name)} (statuses ${list(cfg.statuses).join(', ')})`);
    } catch {
      warnings.push('config.yml: unreadable, ignored');
    }
  }
  const seen = new Set<string>();
  const milestones = new Map<string, string>();
  for (const path of files('milestones')) {
    const parsed = parseBacklogFile(path);
    const id = str(parsed?.fm.id)?.toLowerCase();
    if (!parsed || !id) {
      warnings.push(`${basename(path)}: unreadable, skipped`);
      continue;
    }
    const title = str(parsed.fm.title) ?? id;
    milestones.set(id, id);
    milestones.set(title.toLowerCase(), id);
    items.push({ source_id: id, type: 'proj', title, body: parsed.body, status: 'active', fields: { milestone: id } });
  }
  const folders: Array<[string, 'task' | 'draft']> = [
    ['tasks', 'task'],
    ['completed', 'task'],
    ['archive/tasks', 'task'],
    ['drafts', 'draft'],
  ];
  for (const [folder, kind] of folders) {
    for (const path of files(folder)) {
      const parsed = parseBacklogFile(path);
      const id = str(parsed?.fm.id)?.toLowerCase();
      if (!parsed || !id || !str(parsed.fm.title)) {
        warnings.push(`${folder}/${basename(path)}: unreadable frontmatter, skipped`);
        continue;
      }
      if (seen.has(id)) {
        warnings.push(`${folder}/${basename(path)}: ${id} already read from an earlier folder; this copy skipped`);
        continue;
      }
      seen.add(id);
      const { fm, body } = parsed;
      const status = backlogStatus(str(fm.status), folder);
      const labels = list(fm.labels).map(String);
      if (kind === 'draft') labels.push('draft');
      const assignees = list(fm.assignee)
        .map(backlogPerson)
        .filter((p): p is ImportPerson => p !== null);
      const reporter = backlogPerson(fm.reporter);
      const priority = BACKLOG_PRIORITY[String(fm.priority ?? '').toLowerCase()];
      const created = backlogDate(fm.created_date);
      const updated = backlogDate(fm.updated_date);
      const milestone = str(fm.milestone)?.toLowerCase();
      items.push({
        source_id: id,
        type: 'task',
        title: String(fm.title),
        body,
        status,
        ...(status === 'cancelled' && str(fm.status) ? { close_reason: String(fm.status) } : {}),
        ...(priority ? { priority } : {}),
        ...(labels.length > 0 ? { labels: [...new Set(labels)] } : {}),
        ...(assignees.length > 0 ? { assignees } : {}),
        ...(reporter ? { owner: reporter } : {}),
        ...(created ? { created_at: created } : {}),
        ...(updated ? { updated_at: updated } : {}),
        ...(status === 'done' || status === 'cancelled' ? { closed_at: updated ?? created } : {}),
        ...(milestone ? { fields: { milestone } } : {}),
      });
      for (const dep of list(fm.dependencies)) {
        const target = str(dep)?.toLowerCase();
        if (target) pending.push({ from: target, edge: { type: 'blocks', to: id } });
      }
      const parent = str(fm.parent_task_id ?? fm.parent)?.toLowerCase();
      if (parent) pending.push({ from: id, edge: { type: 'part-of', to: parent } });
      if (milestone && milestones.has(milestone)) pending.push({ from: id, edge: { type: 'part-of', to: milestones.get(milestone)! } });
    }
  }
  for (const path of files('archive/drafts')) {
    void path;
    deleted++; // discarded drafts: Backlog.md's own deletion
  }
  for (const path of files('decisions')) {
    const parsed = parseBacklogFile(path);
    const id = str(parsed?.fm.id)?.toLowerCase();
    if (!parsed || !id || !str(parsed.fm.title)) {
      warnings.push(`decisions/${basename(path)}: unreadable, skipped`);
      continue;
    }
    const raw = String(parsed.fm.status ?? 'proposed').toLowerCase();
    const status = ['proposed', 'accepted', 'rejected', 'superseded'].includes(raw) ? raw : 'proposed';
    const date = backlogDate(parsed.fm.date);
    items.push({
      source_id: id,
      type: 'dec',
      title: String(parsed.fm.title),
      body: parsed.body,
      status,
      ...(date ? { created_at: date, ...(status !== 'proposed' ? { closed_at: date } : {}) } : {}),
    });
  }
  for (const path of files('docs')) {
    const parsed = parseBacklogFile(path);
    const id = str(parsed?.fm.id)?.toLowerCase();
    if (!parsed || !id || !str(parsed.fm.title)) {
      warnings.push(`docs/${basename(path)}: unreadable, skipped`);
      continue;
    }
    const created = backlogDate(parsed.fm.created_date);
    items.push({
      source_id: id,
      type: 'spec',
      title: String(parsed.fm.title),
      body: parsed.body,
      status: 'active',
      ...(created ? { created_at: created, closed_at: backlogDate(parsed.fm.updated_date) ?? created } : {}),
      ...(str(parsed.fm.type) ? { labels: [String(parsed.fm.type)] } : {}),
    });
  }
  // Older tasks name their dependencies with the default `task-` prefix the project later renamed.
  const ids = new Set(items.map((i) => i.source_id));
  const renamed = (id: string) => (ids.has(id) ? id : id.replace(/^task-/, `${taskPrefix}-`));
  attachEdges(
    items,
    pending.map((p) => ({ from: renamed(p.from), edge: { ...p.edge, to: renamed(p.edge.to) } })),
    warnings,
  );
  return { source: 'backlog', items, deleted, warnings };
}

// ---------------------------------------------------------------- GitHub (`gh issue list --json ...`)

const numberOf = (v: unknown): string | undefined => {
  if (typeof v === 'number') return String(v);
  if (v && typeof v === 'object' && typeof (v as Json).number === 'number') return String((v as Json).number);
  return undefined;
};

export function readGithub(file: string): ReadResult {
  const warnings: string[] = [];
  const raw = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  const issues = (Array.isArray(raw) ? raw : []) as Json[];
  const items: ImportItem[] = [];
  const pending: Array<{ from: string; edge: Omit<Edge, 'to_type'> }> = [];
  for (const o of issues) {
    const id = numberOf(o);
    if (!id || !str(o.title)) {
      warnings.push('an issue without number or title was skipped');
      continue;
    }
    const labels = list(o.labels)
      .map((l) => (l && typeof l === 'object' ? String((l as Json).name ?? '') : String(l)))
      .filter(Boolean);
    const type = labels.some((l) => /bug|defect/i.test(l)) ? 'issue' : 'task';
    const closed = String(o.state ?? '').toUpperCase() === 'CLOSED';
    const notPlanned = /NOT_PLANNED|DUPLICATE/i.test(String(o.stateReason ?? ''));
    const status = !closed ? 'open' : notPlanned ? (type === 'issue' ? 'wontfix' : 'cancelled') : type === 'issue' ? 'resolved' : 'done';
    const assignees = list(o.assignees)
      .map((a) => (a && typeof a === 'object' ? { name: String((a as Json).login ?? (a as Json).name ?? '') } : { name: String(a) }))
      .filter((a) => a.name);
    const author = o.author && typeof o.author === 'object' ? str((o.author as Json).login) : undefined;
    const milestone = o.milestone && typeof o.milestone === 'object' ? str((o.milestone as Json).title) : undefined;
    items.push({
      source_id: id,
      type,
      title: String(o.title),
      body: str(o.body) ? String(o.body) : '',
      status,
      ...(closed && o.stateReason ? { close_reason: String(o.stateReason) } : {}),
      ...(labels.length > 0 ? { labels } : {}),
      ...(assignees.length > 0 ? { assignees } : {}),
      ...(author ? { owner: { name: author } } : {}),
      ...(str(o.createdAt) ? { created_at: String(o.createdAt) } : {}),
      ...(str(o.updatedAt) ? { updated_at: String(o.updatedAt) } : {}),
      ...(str(o.closedAt) ? { closed_at: String(o.closedAt) } : {}),
      ...(milestone ? { fields: { milestone } } : {}),
    });
    const parent = numberOf(o.parent);
    if (parent) pending.push({ from: id, edge: { type: 'part-of', to: parent } });
    for (const sub of list(o.subIssues ?? o.sub_issues)) {
      const n = numberOf(sub);
      if (n) pending.push({ from: n, edge: { type: 'part-of', to: id } });
    }
    for (const b of list(o.blockedBy ?? o.blocked_by)) {
      const n = numberOf(b);
      if (n) pending.push({ from: n, edge: { type: 'blocks', to: id } });
    }
    for (const b of list(o.blocking)) {
      const n = numberOf(b);
      if (n) pending.push({ from: id, edge: { type: 'blocks', to: n } });
    }
  }
  attachEdges(items, pending, warnings);
  return { source: 'github', items, deleted: 0, warnings };
}
