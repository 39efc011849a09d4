/**
 * Human reports (`format=text`): the analytics payload and the program tree as plain
 * text. Both render exactly the JSON payload, so the text never says more than the JSON.
 */
import type { AnalyticsPayload, ProgramNode, ProgramPayload, Stats } from './schemas.js';
import type { Phase } from '../core/public.js';

const oneLine = (text: string) => text.replace(/\s*\r?\n\s*/g, ' ');
const counts = (map: Record<string, number>) =>
  Object.entries(map)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';
const num = (v: number | null) => (v === null ? '-' : String(v));

function statsLine(s: Stats): string {
  if (s.count === 0) return 'no completions in the window';
  return `n=${s.count}  mean ${num(s.mean)}  median ${num(s.median)}  p85 ${num(s.p85)}  min ${num(s.min)}  max ${num(s.max)}`;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

export function renderAnalyticsText(org: string, a: AnalyticsPayload): string {
  const out: string[] = [];
  const scope = [a.scope.project ? `project ${a.scope.project}` : 'all projects', `types ${a.scope.types.join(', ')}`].join(' · ');
  out.push(`Analytics: ${org} · ${scope}`);
  out.push(
    `Window: ${a.window.weeks} week(s), ${a.window.from.slice(0, 10)} to ${a.window.to.slice(0, 10)} (weeks start Monday, UTC); generated ${a.generated_at}`,
  );
  if (a.project_warning) out.push(`Warning: ${a.project_warning}`);
  out.push('');

  const t = a.totals;
  out.push('Totals');
  out.push(`  ${t.nodes} node(s): ${t.done} done, ${t.active} active, ${t.blocked} blocked, ${t.open} open`);
  for (const [type, c] of Object.entries(t.by_type))
    out.push(`  ${type}: ${c.nodes} (${c.done} done, ${c.active} active, ${c.blocked} blocked, ${c.open} open)`);
  out.push(`  by status: ${counts(t.by_status)}`);
  out.push('');

  out.push('Throughput');
  out.push(`  ${a.throughput.completed} completed in the window, ${a.throughput.weekly_mean} per week`);
  if (a.throughput.completed > 0) {
    out.push(`  by type: ${counts(a.throughput.by_type)}`);
    out.push(`  by status: ${counts(a.throughput.by_status)}`);
  }
  out.push('');

  out.push('Weekly');
  for (const line of table(
    ['week', 'starts', 'created', 'completed'],
    a.weekly.map((w) => [w.week, w.start, String(w.created), String(w.completed)]),
  ))
    out.push(`  ${line}`);
  out.push('');

  out.push('Cycle time (days, first active status to completion)');
  out.push(`  ${statsLine(a.cycleTimeDays)}`);
  if (a.cycleTimeDays.never_started > 0)
    out.push(`  ${a.cycleTimeDays.never_started} completed without an active status (measured from when they were opened)`);
  out.push('Lead time (days, creation to completion)');
  out.push(`  ${statsLine(a.leadTimeDays)}`);
  out.push('');

  const w = a.wip;
  out.push(`Work in progress: ${w.count}${w.count > 0 ? ` (${counts(w.by_status)}; mean age ${num(w.mean_age_days)} days)` : ''}`);
  out.push(
    `  aging (active ${w.aging_days}+ days): ${w.aging_count}${w.aging_count > w.aging.length ? `, oldest ${w.aging.length} shown` : ''}`,
  );
  for (const e of w.aging) {
    const who = e.assigned.length > 0 ? `, assigned ${e.assigned.join(', ')}` : '';
    out.push(`  - ${e.id} ${oneLine(e.title)} [${e.status}] ${e.age_days} days since ${e.since.slice(0, 10)}${who}`);
  }
  out.push('');

  out.push(`Bottlenecks: ${a.bottlenecks.length === 0 ? 'none' : ''}`.trimEnd());
  for (const b of a.bottlenecks) {
    const outside = b.in_scope ? '' : ', outside the scope';
    out.push(
      `  - ${b.id} ${oneLine(b.title)} [${b.status}] holds up ${b.blocks_transitive} (directly ${b.blocks}), ${b.age_days} days old${outside}`,
    );
  }
  out.push('');

  const c = a.coverage;
  out.push('Coverage');
  out.push(`  open work prioritized: ${c.prioritized}/${c.open} (${c.prioritized_pct}%)`);
  out.push(`  open work assigned: ${c.assigned}/${c.open} (${c.assigned_pct}%)`);
  out.push(`  completed work linked to commits: ${c.with_commits}/${c.completed} (${c.with_commits_pct}%)`);
  return out.join('\n') + '\n';
}

const MARK: Record<Phase, string> = { done: '[x]', active: '[>]', blocked: '[!]', open: '[ ]' };

function label(n: ProgramNode): string {
  const edge = n.edge
    ? ` (${Object.entries(n.edge)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`
    : '';
  const base = `${MARK[n.phase]} ${n.id} ${oneLine(n.title)} (${n.type}, ${n.status})${edge}`;
  if (n.repeat) {
    if (n.cycle) return `${base} (cycle: it is an ancestor here)`;
    return `${base} (shared: expanded under ${n.expanded_under ?? 'the root'})`;
  }
  return n.shared ? `${base} (shared)` : base;
}

function renderChildren(node: ProgramNode, prefix: string, out: string[]): void {
  const kids = node.blockers ?? [];
  const tail = node.more !== undefined ? 1 : 0;
  kids.forEach((child, i) => {
    const last = i === kids.length - 1 && tail === 0;
    out.push(`${prefix}${last ? '└── ' : '├── '}${label(child)}`);
    renderChildren(child, prefix + (last ? '    ' : '│   '), out);
  });
  if (node.more !== undefined)
    out.push(`${prefix}└── … ${node.more} more blocker(s) not shown (${node.cut === 'depth' ? 'depth' : 'max_nodes'} limit)`);
}

export function renderProgramText(p: ProgramPayload): string {
  const out: string[] = [];
  const g = p.progress;
  out.push(`Program: ${p.id} ${oneLine(p.title)} (${p.type}, ${p.status})`);
  if (g.total === 0 && p.more === undefined) {
    out.push('Nothing blocks this node: no gating work.');
    return out.join('\n') + '\n';
  }
  out.push(`Progress: ${g.done}/${g.total} done (${g.pct}%) · ${g.active} active · ${g.blocked} blocked · ${g.open} open`);
  out.push(`Statuses: ${counts(g.statuses)}`);
  out.push('');
  out.push(label({ ...p, repeat: false, shared: false }));
  renderChildren(p, '', out);
  if (p.truncated.length > 0) {
    const skipped = p.truncated.reduce((a, b) => a + b.skipped, 0);
    out.push('');
    out.push(
      `Truncated: ${p.truncated.length} branch(es), ${skipped} blocker link(s) not shown (depth ${p.bounds.depth}, max_nodes ${p.bounds.max_nodes}).`,
    );
  }
  return out.join('\n') + '\n';
}
