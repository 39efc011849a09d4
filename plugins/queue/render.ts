/**
 * The queue envelope as markdown (the `render_queue` tool): the ranked page with each item's
 * suggestion, score and why line, then the routed sections and the counts.
 */
import type { Static } from '../../kernel/operation.js';
import type { QueuePolicy } from './policy.js';
import type { QueueEnvelope, SectionEntry } from './schemas.js';

function escape(text: string): string {
  return text.replace(/([\\`*_[\]|<>])/g, '\\$1').replace(/\r?\n/g, ' ');
}

function section(title: string, entries: Static<typeof SectionEntry>[], total: number): string[] {
  const lines = [`## ${title} (${total})`, ''];
  if (entries.length === 0) lines.push('_none_');
  for (const e of entries) {
    const extra = e.answered_by
      ? ` (answered by ${e.answered_by.join(', ')})`
      : e.routed_to.length > 0
        ? ` (routed to ${e.routed_to.join(', ')})`
        : '';
    lines.push(`- \`${e.id}\` ${escape(e.title)} [${e.status}]${extra}`);
  }
  if (total > entries.length) lines.push(`- … ${total - entries.length} more`);
  lines.push('');
  return lines;
}

const counts = (map: Record<string, number>) =>
  Object.entries(map)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';

export function renderQueueMarkdown(org: string, q: Static<typeof QueueEnvelope> & { policy: QueuePolicy }): string {
  const lines: string[] = [];
  const first = q.items.length > 0 ? q.offset + 1 : q.offset;
  lines.push(`# Decision queue: ${org}`, '');
  lines.push(`Items ${first}-${q.offset + q.items.length} of ${q.total_count}, generated ${q.generated_at}.`);
  const hidden = [
    q.muted ? `${q.muted} muted` : '',
    q.dormant ? `${q.dormant} dormant` : '',
    q.reserved ? `${q.reserved} reserved by teammates` : '',
  ].filter(Boolean);
  if (hidden.length > 0) lines.push(`Hidden: ${hidden.join(', ')}.`);
  if (q.next_offset !== null) lines.push(`More: offset=${q.next_offset}.`);
  lines.push('');
  if (q.items.length === 0) lines.push('_Nothing to do here._', '');
  q.items.forEach((item, i) => {
    const tags = [item.priority ?? 'no priority', item.suggest, `score ${item.score}`, item.readiness ? `${item.readiness}-ready` : '']
      .filter(Boolean)
      .join(' · ');
    lines.push(
      `${q.offset + i + 1}. **${escape(item.title)}** \`${item.id}\` (${item.type}, ${item.status}${item.project ? `, ${item.project}` : ''}) · ${tags}`,
    );
    lines.push(`   ${escape(item.why)}`);
    if (item.readiness_reasons && item.readiness_reasons.length > 0)
      lines.push(`   Readiness: ${escape(item.readiness_reasons.join('; '))}`);
  });
  lines.push('');
  lines.push(...section('Questions for you', q.questions, q.section_totals.questions ?? q.questions.length));
  lines.push(...section('Questions you asked', q.asked, q.section_totals.asked ?? q.asked.length));
  lines.push(...section('Reviews requested from you', q.reviews, q.section_totals.reviews ?? q.reviews.length));
  lines.push(...section('Findings', q.findings, q.section_totals.findings ?? q.findings.length));
  lines.push(...section('Pending captures', q.pending, q.section_totals.pending ?? q.pending.length));
  lines.push('## Counts', '');
  lines.push(`- by suggestion: ${counts(q.counts_by_suggest)}`);
  lines.push(`- by readiness: ${counts(q.counts_by_readiness)}`);
  lines.push(`- by type: ${counts(q.counts_by_type)}`);
  lines.push(`- by project: ${counts(q.counts_by_project)}`);
  lines.push('', `Ranking policy: ${q.policy.doc}`, '');
  return lines.join('\n');
}
