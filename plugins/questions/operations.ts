/**
 * Questions (SPEC Writes: POST /v1/questions, rule 12; tool twin `ask_question`): file a
 * `question-` node, derive its project and route it to the steward of the closest node in
 * its relevance neighborhood (neighborhood.ts). A question is answered by any node with an
 * `answers` edge to it; the queue shows it under the steward's `questions` and the asker's
 * `asked` (plugins/queue reads `routed_to`, `asker`, `mentions`).
 */
import { createHash } from 'node:crypto';
import { errors } from '../../kernel/errors.js';
import type { OpContext } from '../../kernel/plugin.js';
import { LIMITS, patterns } from '../../kernel/registry.js';
import type { WriteDraft } from '../../kernel/tenant.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { optionalString, requireObject, requireString } from '../../kernel/validate.js';
import { graphNeighborhood, homeProject, projectFromNeighborhood, projectSteps, resolveProjectNode, routeQuestion } from './neighborhood.js';

export const MAX_MENTIONS = 20;
export const TITLE_MAX = 500;
/** the question text is held to the node body limit */
export const TEXT_MAX_BYTES = LIMITS.bodyBytes;
const SLUG_MAX = 60;

export interface AskInput {
  text: string;
  title?: string;
  mentions: string[];
  /** an explicit project slug (already checked) */
  project?: string;
}

export interface AskResult {
  status: 'created';
  id: string;
  project: string | null;
  routed_to: string | null;
  via: string | null;
  asker: string;
  revision: string | null;
  warnings: string[];
}

/** Adapter-edge validation: 422 for bad text/title/mentions, 400 for a malformed project slug (SPEC Errors). */
export function parseAskInput(raw: unknown): AskInput {
  const body = requireObject(raw);
  const text = requireString(body, 'text');
  if (Buffer.byteLength(text, 'utf8') > TEXT_MAX_BYTES) {
    throw errors.validation(`text exceeds ${TEXT_MAX_BYTES} bytes`, [{ field: 'text', message: `at most ${TEXT_MAX_BYTES} bytes` }]);
  }
  const title = optionalString(body, 'title', { max: TITLE_MAX, singleLine: true });
  const mentions = parseMentions(body.mentions);
  const input: AskInput = { text, mentions };
  if (title !== undefined && title.trim() !== '') input.title = title.trim();
  if (body.project !== undefined && body.project !== null) {
    const project = body.project;
    if (typeof project !== 'string' || !patterns.id.test(project) || project.length > 200) {
      throw errors.badRequest('project must be a kebab-case slug matching ^[a-z0-9][a-z0-9-]*$', { field: 'project', value: typeof project === 'string' ? project.slice(0, 200) : project });
    }
    input.project = project;
  }
  return input;
}

/** `mentions`: a list of node ids (or one id); duplicates collapse, order is kept. */
function parseMentions(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) throw errors.validation('mentions must be a list of node ids', [{ field: 'mentions', message: 'expected an array of node ids' }]);
  const out: string[] = [];
  const bad: unknown[] = [];
  for (const item of list) {
    if (typeof item !== 'string' || !patterns.id.test(item) || item.length > 200) bad.push(item);
    else if (!out.includes(item)) out.push(item);
  }
  if (bad.length > 0) throw errors.validation('mentions must be node ids matching ^[a-z0-9][a-z0-9-]*$', [{ field: 'mentions', message: 'malformed id', values: bad.slice(0, 20) }]);
  if (out.length > MAX_MENTIONS) {
    throw errors.validation(`at most ${MAX_MENTIONS} mentions`, [{ field: 'mentions', message: `at most ${MAX_MENTIONS} distinct node ids`, count: out.length }]);
  }
  return out;
}

function slugOf(text: string): string {
  const slug = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, SLUG_MAX)
    .replace(/-+$/, '');
  return slug || createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/** `question-<slug of title or text>`, with `-2`, `-3`, ... when taken. */
function freshId(draft: WriteDraft, seed: string): string {
  const base = `question-${slugOf(seed)}`;
  if (!draft.get(base)) return base;
  for (let n = 2; ; n++) {
    const id = `${base}-${n}`;
    if (!draft.get(id)) return id;
  }
}

/** One line, at most the summary limit: the title, else the text with its whitespace folded. */
function summaryOf(input: AskInput): string {
  const line = (input.title ?? input.text).replace(/\s+/g, ' ').trim();
  return line.length <= LIMITS.summaryChars ? line : `${line.slice(0, LIMITS.summaryChars - 1)}…`;
}

export async function askQuestion(ctx: OpContext, raw: unknown): Promise<AskResult> {
  const input = parseAskInput(raw);
  const actor = writeActorOf(ctx.actor);
  const asker = actor.personId;
  const { tenant } = ctx;
  return tenant.write(actor, { op: 'ask_question', via: ctx.via }, async (draft) => {
    // Checked inside the write job, so the routing sees exactly the graph the question joins.
    const missing = input.mentions.filter((id) => !tenant.index.has(id));
    if (missing.length > 0) throw errors.notFound(`mentioned node ${missing.join(', ')}`, { mentions: missing });
    const warnings: string[] = [];

    const neighborhood = graphNeighborhood(tenant, input.mentions);
    let project: string | null = input.project ?? null;
    if (project !== null) {
      if (!resolveProjectNode(tenant, project)) warnings.push(`project '${project}' matches no repo or project grouping; kept as given`);
    } else {
      project = projectFromNeighborhood(tenant, neighborhood) ?? homeProject(tenant, asker);
    }
    const routing = routeQuestion(tenant, [...neighborhood, ...projectSteps(tenant, project)], asker);
    if (!routing.routedTo) warnings.push('no steward found in the relevance neighborhood: the question is unrouted and shows in every member\'s queue');

    const id = freshId(draft, input.title ?? input.text);
    const frontmatter: Record<string, unknown> = { id, type: 'question', status: 'open' };
    if (input.title) frontmatter.title = input.title;
    frontmatter.summary = summaryOf(input);
    frontmatter.text = input.text;
    if (project) frontmatter.project = project;
    frontmatter.asker = asker;
    if (routing.routedTo) {
      frontmatter.routed_to = routing.routedTo;
      frontmatter.routed_via = routing.via;
    }
    if (input.mentions.length > 0) {
      frontmatter.mentions = input.mentions;
      frontmatter.edges = input.mentions.map((to) => ({ type: 'mentions', to }));
    }
    draft.put({ frontmatter, body: '' });
    await draft.commit();
    return {
      status: 'created' as const,
      id,
      project,
      routed_to: routing.routedTo,
      via: routing.via,
      asker,
      revision: tenant.index.get(id)?.revision ?? null,
      warnings,
    };
  });
}
