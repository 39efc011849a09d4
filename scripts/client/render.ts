/**
 * Answers for people: tables for lists, the markdown of a node, `key: value` for the rest.
 * Colour only on a terminal and never with NO_COLOR (https://no-color.org) or --no-color.
 * Programs use --json, which prints the API's bytes untouched.
 */
export interface Style {
  bold: (s: string) => string;
  dim: (s: string) => string;
  red: (s: string) => string;
  green: (s: string) => string;
  yellow: (s: string) => string;
  cyan: (s: string) => string;
}

export function styleFor(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { bold: wrap(1, 22), dim: wrap(2, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39), cyan: wrap(36, 39) };
}

export function colorWanted(flag: boolean, stream: NodeJS.WriteStream): boolean {
  return flag && Boolean(stream.isTTY) && !('NO_COLOR' in process.env && process.env.NO_COLOR !== '') && process.env.TERM !== 'dumb';
}

type Row = Record<string, unknown>;

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v.replace(/\s+/g, ' ');
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object' || x === null)) return v.join(', ');
  return JSON.stringify(v);
}

const width = (s: string) => [...s].length;
const truncate = (s: string, max: number) => (width(s) <= max ? s : [...s].slice(0, Math.max(1, max - 1)).join('') + '…');

/** A plain-text table; on a terminal the widest column is cut to fit its width. */
export function table(rows: Row[], columns: string[], style: Style, maxWidth?: number): string {
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(width(c), ...cells.map((row) => width(row[i]!))));
  if (maxWidth) {
    const total = widths.reduce((a, b) => a + b, 0) + 2 * (columns.length - 1);
    if (total > maxWidth) {
      const widest = widths.indexOf(Math.max(...widths));
      widths[widest] = Math.max(10, widths[widest]! - (total - maxWidth));
    }
  }
  const line = (vals: string[]) =>
    vals
      .map((v, i) => (i === vals.length - 1 ? truncate(v, widths[i]!) : truncate(v, widths[i]!).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [style.bold(line(columns.map((c) => c.toUpperCase()))), ...cells.map(line)].join('\n') + '\n';
}

/** Columns worth showing for a list of objects: the scalar ones, in a useful order, at most seven. */
function columnsOf(rows: Row[]): string[] {
  const preferred = [
    'rank',
    'id',
    'prefix',
    'type',
    'status',
    'priority',
    'suggest',
    'title',
    'name',
    'summary',
    'when',
    'at',
    'date',
    'author',
    'message',
    'why',
  ];
  const keys = new Set<string>();
  for (const r of rows.slice(0, 20))
    for (const [k, v] of Object.entries(r))
      if (v === null || typeof v !== 'object' || (Array.isArray(v) && v.every((x) => typeof x !== 'object'))) keys.add(k);
  const ordered = [...preferred.filter((k) => keys.has(k)), ...[...keys].filter((k) => !preferred.includes(k))];
  return ordered.slice(0, 7);
}

const isRowList = (v: unknown): v is Row[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x));

/** The generic rendering of any JSON answer. */
export function renderValue(value: unknown, style: Style, maxWidth?: number): string {
  if (isRowList(value)) return table(value, columnsOf(value), style, maxWidth);
  if (typeof value !== 'object' || value === null) return `${cell(value)}\n`;
  if (Array.isArray(value)) return value.map(cell).join('\n') + (value.length ? '\n' : '');
  const obj = value as Row;
  // the node reading: its markdown is the readable form
  if (typeof obj.markdown === 'string' && typeof obj.id === 'string') return renderNode(obj, style);
  const scalars: string[] = [];
  const sections: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (isRowList(v)) sections.push(`\n${style.bold(k)} (${v.length})\n${table(v, columnsOf(v), style, maxWidth)}`);
    else if (Array.isArray(v) && v.length === 0) continue;
    else if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const entries = Object.entries(v as Row);
      if (entries.length === 0) continue;
      scalars.push(`${style.dim(k + ':')} ${entries.map(([a, b]) => `${a}=${cell(b)}`).join(' ')}`);
    } else scalars.push(`${style.dim(k + ':')} ${cell(v)}`);
  }
  return (scalars.length ? scalars.join('\n') + '\n' : '') + sections.join('');
}

export function renderNode(node: Row, style: Style): string {
  const head = `${style.bold(String(node.id))} ${style.dim(`revision ${String(node.revision ?? '').slice(0, 12)}`)}\n`;
  return head + String(node.markdown).replace(/\n?$/, '\n');
}

/** The queue: what to do next, ranked, with why. */
export function renderQueue(q: Row, style: Style, maxWidth?: number): string {
  const items = (Array.isArray(q.items) ? q.items : []) as Row[];
  const out: string[] = [];
  if (items.length === 0) out.push('The queue is empty.\n');
  else {
    const rows = items.map((it, i) => ({
      '#': Number(q.offset ?? 0) + i + 1,
      id: it.id,
      status: it.status,
      priority: it.priority ?? '',
      suggest: it.suggest,
      lease: it.lease && typeof it.lease === 'object' ? (it.lease as Row).by : '',
      title: it.title,
    }));
    out.push(table(rows, ['#', 'id', 'status', 'priority', 'suggest', 'lease', 'title'], style, maxWidth));
    out.push(
      style.dim(
        `${items.length} of ${cell(q.total_count)}${q.next_offset !== null && q.next_offset !== undefined ? ` (more: --offset ${cell(q.next_offset)})` : ''}`,
      ) + '\n',
    );
  }
  for (const section of ['questions', 'asked', 'findings', 'pending', 'reviews']) {
    const list = q[section];
    if (isRowList(list)) out.push(`\n${style.bold(section)} (${list.length})\n${table(list, ['id', 'status', 'title'], style, maxWidth)}`);
  }
  return out.join('');
}

/** put_node: one line per entry. */
export function renderPut(r: Row, style: Style): string {
  const results = (Array.isArray(r.results) ? r.results : []) as Row[];
  return (
    results
      .map((e) => {
        const status = String(e.status);
        const mark = status === 'failed' ? style.red(status) : style.green(status);
        const err = e.error && typeof e.error === 'object' ? ` ${(e.error as Row).code}: ${(e.error as Row).message}` : '';
        const warn = Array.isArray(e.warnings) && e.warnings.length ? style.yellow(` (warnings: ${e.warnings.join('; ')})`) : '';
        return `${mark} ${e.id ?? `#${e.index}`}${e.revision ? style.dim(` ${String(e.revision).slice(0, 12)}`) : ''}${err}${warn}`;
      })
      .join('\n') + '\n'
  );
}
