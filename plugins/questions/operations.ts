/**
 * Questions (docs/spec.md Writes: POST /v1/questions, rule 12; tool twin `ask_question`): file a
 * `question-` node, derive its project and route it to the steward of the closest node in
 * its relevance neighborhood (neighborhood.ts). A question is answered by any node with an
 * `answers` edge to it; the queue shows it under the steward's `questions` and the asker's
 * `asked` (plugins/queue reads `routed_to`, `asker`, `mentions`).
 */
import { createHash } from 'node:crypto';
import { errors } from '../../kernel/errors.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { LIMITS, patterns } from '../../kernel/registry.js';
import type { WriteDraft } from '../../kernel/write-draft.js';
import { writeActorOf } from '../../kernel/tenants.js';
import type { AnswerQuestionInput, AnswerQuestionOutput, AskQuestionInput, AskQuestionOutput } from './api.js';
import {
  graphNeighborhood,
  homeProject,
  projectFromNeighborhood,
  projectSteps,
  resolveProjectNode,
  routeQuestion,
} from './neighborhood.js';

export const MAX_MENTIONS = 20;
export const TITLE_MAX = 500;
/** the question text is held to the node body limit */
export const TEXT_MAX_BYTES = LIMITS.bodyBytes;
const SLUG_MAX = 60;

/** A question as the rules below leave it: the text checked in bytes, distinct mentions, a checked project slug. */
interface ParsedQuestion {
  text: string;
  title?: string;
  mentions: string[];
  /** an explicit project slug (already checked) */
  project?: string;
}

/** What the schema cannot say: the text in bytes, distinct mentions, and a 400 (not 422) for a malformed project slug (docs/spec.md Errors). */
export function parseAskInput(body: Static<typeof AskQuestionInput>): ParsedQuestion {
  const { text } = body;
  if (Buffer.byteLength(text, 'utf8') > TEXT_MAX_BYTES) {
    throw errors.validation(`text exceeds ${TEXT_MAX_BYTES} bytes`, [{ field: 'text', message: `at most ${TEXT_MAX_BYTES} bytes` }]);
  }
  const mentions = distinctMentions(body.mentions);
  const input: ParsedQuestion = { text, mentions };
  const title = body.title ?? undefined;
  if (title !== undefined && title.trim() !== '') input.title = title.trim();
  if (body.project !== undefined && body.project !== null) {
    const project = body.project;
    if (typeof project !== 'string' || !patterns.id.test(project) || project.length > 200) {
      throw errors.badRequest('project must be a kebab-case slug matching ^[a-z0-9][a-z0-9-]*$', {
        field: 'project',
        value: typeof project === 'string' ? project.slice(0, 200) : project,
      });
    }
    input.project = project;
  }
  return input;
}

/** `mentions`: a list of node ids (or one id); duplicates collapse, order is kept. */
function distinctMentions(value: string | string[] | null | undefined): string[] {
  if (value === undefined || value === null) return [];
  const out = [...new Set(typeof value === 'string' ? [value] : value)];
  if (out.length > MAX_MENTIONS) {
    throw errors.validation(`at most ${MAX_MENTIONS} mentions`, [
      { field: 'mentions', message: `at most ${MAX_MENTIONS} distinct node ids`, count: out.length },
    ]);
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
function summaryOf(input: ParsedQuestion): string {
  const line = (input.title ?? input.text).replace(/\s+/g, ' ').trim();
  return line.length <= LIMITS.summaryChars ? line : `${line.slice(0, LIMITS.summaryChars - 1)}…`;
}

export async function askQuestion(ctx: OpContext, raw: Static<typeof AskQuestionInput>): Promise<Static<typeof AskQuestionOutput>> {
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
    if (!routing.routedTo)
      warnings.push("no steward found in the relevance neighborhood: the question is unrouted and shows in every member's queue");

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

/**
 * answer_question (POST /v1/questions/{id}/answer): the answer node with its `answers` edge to
 * the question, and the question moved to `answered`, in one commit, so no reader sees an
 * answer that is not yet linked or a question answered by nothing.
 */
export async function answerQuestion(
  ctx: OpContext,
  input: Static<typeof AnswerQuestionInput>,
): Promise<Static<typeof AnswerQuestionOutput>> {
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  const typeName = input.type ?? 'dec';
  const typeDef = tenant.registry.nodeTypes.get(typeName);
  if (!typeDef)
    throw errors.validation(`unknown node type '${typeName}'`, [
      { field: 'type', message: 'not a type in the registry', allowed: [...tenant.registry.nodeTypes.keys()] },
    ]);
  if (typeDef.type === 'question')
    throw errors.validation('an answer cannot itself be a question; ask a new question with ask_question', [{ field: 'type' }]);
  if (Buffer.byteLength(input.body ?? '', 'utf8') > LIMITS.bodyBytes) {
    throw errors.validation(`body exceeds ${LIMITS.bodyBytes} bytes`, [{ field: 'body', message: `at most ${LIMITS.bodyBytes} bytes` }]);
  }
  return tenant.write(actor, { op: 'answer_question', via: ctx.via }, async (draft) => {
    const question = draft.get(input.id);
    if (!question) throw errors.notFound(`node ${input.id}`);
    if (question.frontmatter.type !== 'question') {
      throw errors.validation(`${input.id} is a ${String(question.frontmatter.type)}, not a question`, [
        { field: 'id', message: 'must be a question- node' },
      ]);
    }
    const id = input.answer_id ?? freshAnswerId(draft, typeDef.prefix, input.id);
    if (!id.startsWith(typeDef.prefix))
      throw errors.validation(`answer_id '${id}' does not carry the ${typeDef.type} prefix '${typeDef.prefix}'`, [
        { field: 'answer_id', message: `must start with ${typeDef.prefix}` },
      ]);
    if (draft.get(id)) throw errors.conflict(`${id} already exists; choose another answer_id`, { id });
    const frontmatter: Record<string, unknown> = { id, type: typeDef.type, summary: input.summary };
    if (typeof question.frontmatter.project === 'string') frontmatter.project = question.frontmatter.project;
    frontmatter.edges = [{ type: 'answers', to: input.id }];
    draft.put({ frontmatter, body: input.body ?? '' });
    const warnings: string[] = [];
    const terminal = tenant.registry.isTerminal('question', String(question.frontmatter.status));
    if (!terminal) {
      question.frontmatter.status = 'answered';
      draft.put(question);
    } else warnings.push(`${input.id} was already ${String(question.frontmatter.status)}; its status is kept`);
    await draft.commit();
    return {
      status: 'created' as const,
      id,
      question: input.id,
      question_status: tenant.index.get(input.id)?.status ?? 'answered',
      revision: tenant.index.get(id)?.revision ?? null,
      warnings: [...warnings, ...draft.warnings],
    };
  });
}

/** `<prefix>answer-<question slug>`, with `-2`, `-3`, ... when taken. */
function freshAnswerId(draft: WriteDraft, prefix: string, questionId: string): string {
  const base = `${prefix}answer-${questionId.replace(/^question-/, '')}`.slice(0, 190).replace(/-+$/, '');
  if (!draft.get(base)) return base;
  for (let n = 2; ; n++) if (!draft.get(`${base}-${n}`)) return `${base}-${n}`;
}
