/**
 * Text and HTML renderings of a lens view tree. Both are read-only: no forms, no scripts,
 * no links that act. Every value that reaches HTML goes through `escapeHtml`, and the
 * response carries a CSP that would block scripts and form posts even if one slipped in.
 */
import type { Tenant } from '../../kernel/tenant.js';
import type { CellValue, LensTree } from './view.js';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** One line, control characters and runs of whitespace folded, so a value cannot forge lines. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
}

/** A cell as people read it: assignees by name, lists joined, missing values as a dash. */
function cellText(tenant: Tenant, column: string, value: CellValue | undefined): string {
  if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) return '-';
  if (column === 'assignee' && Array.isArray(value)) {
    return value.map((id) => tenant.index.get(String(id))?.title || String(id)).join(', ');
  }
  if (Array.isArray(value)) return value.map(String).join(', ');
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

function groupLabel(tree: LensTree, key: string | null): string {
  if (tree.group_by === null) return 'All items';
  return key === null ? `(no ${tree.group_by})` : key;
}

function sharerLine(tree: LensTree): string | null {
  const s = tree.sharer;
  if (!s) return null;
  const label = s.label ? ` "${oneLine(s.label)}"` : '';
  return `Shared by ${oneLine(s.name)} (${s.id})${label}. Read-only view; the link expires ${s.expires}.`;
}

function paramsLine(tree: LensTree): string {
  const entries = Object.entries(tree.params);
  return entries.length ? entries.map(([k, v]) => `${k}=${v === '' ? '(unset)' : v}`).join(', ') : '';
}

function summaryLine(tree: LensTree): string {
  const shown = tree.truncated
    ? `${tree.count} of ${tree.total} items (cut at the lens limit)`
    : `${tree.count} item${tree.count === 1 ? '' : 's'}`;
  const params = paramsLine(tree);
  return `${shown} · generated ${tree.generated_at}${params ? ` · params: ${oneLine(params)}` : ''}`;
}

export function renderText(tenant: Tenant, tree: LensTree): string {
  const lines: string[] = [oneLine(tree.title) || tree.lens_id, `lens ${tree.lens_id}`];
  const banner = sharerLine(tree);
  if (banner) lines.push(banner);
  lines.push(summaryLine(tree), '');
  if (tree.groups.length === 0) lines.push('No items match this lens.');
  const rest = tree.columns.filter((c) => c !== 'id' && c !== 'title');
  for (const group of tree.groups) {
    lines.push(`## ${oneLine(groupLabel(tree, group.key))} (${group.count})`);
    for (const item of group.items) {
      const cells = [item.id, oneLine(item.title), ...rest.map((c) => `${c}: ${oneLine(cellText(tenant, c, item[c]))}`)];
      lines.push(`- ${cells.join(' | ')}`);
    }
    lines.push('');
  }
  return lines.join('\n').replace(/\n+$/, '') + '\n';
}

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d1d1f;background:#fff}
h1{font-size:1.4rem;margin:0 0 .25rem}h2{font-size:1.05rem;margin:1.5rem 0 .5rem}
.meta{color:#666;margin:0 0 1rem}.banner{background:#fff7d6;border:1px solid #e6cf74;border-radius:6px;padding:.6rem .8rem;margin:0 0 1rem}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #e5e5e5;vertical-align:top}
th{font-weight:600;color:#444;background:#fafafa}td.id{font-family:ui-monospace,monospace;white-space:nowrap}.count{color:#888;font-weight:400}`;

/** The Content-Security-Policy of HTML renders: no scripts, no forms, no framing, inline style only. */
export const HTML_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

export function renderHtml(tenant: Tenant, tree: LensTree): string {
  const e = escapeHtml;
  const title = oneLine(tree.title) || tree.lens_id;
  const out: string[] = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${e(title)}</title>`,
    `<style>${STYLE}</style></head>`,
    '<body>',
  ];
  const banner = tree.sharer;
  if (banner) {
    const label = banner.label ? ` &ldquo;${e(oneLine(banner.label))}&rdquo;` : '';
    out.push(
      `<div class="banner" role="note">Shared by <strong>${e(oneLine(banner.name))}</strong> (${e(banner.id)})${label}. ` +
        `Read-only view; the link expires <time datetime="${e(banner.expires)}">${e(banner.expires)}</time>.</div>`,
    );
  }
  out.push(`<header><h1>${e(title)}</h1><p class="meta">${e(summaryLine(tree))}</p></header>`, '<main>');
  if (tree.groups.length === 0) out.push('<p>No items match this lens.</p>');
  for (const group of tree.groups) {
    out.push(`<section><h2>${e(groupLabel(tree, group.key))} <span class="count">(${group.count})</span></h2>`);
    out.push(`<table><thead><tr>${tree.columns.map((c) => `<th scope="col">${e(c)}</th>`).join('')}</tr></thead><tbody>`);
    for (const item of group.items) {
      const cells = tree.columns.map((c) => {
        const text = c === 'id' ? item.id : c === 'title' ? oneLine(item.title) : cellText(tenant, c, item[c]);
        return `<td class="${e(c)}">${e(text)}</td>`;
      });
      out.push(`<tr>${cells.join('')}</tr>`);
    }
    out.push('</tbody></table></section>');
  }
  out.push('</main>', '</body></html>', '');
  return out.join('\n');
}
