/**
 * The workflow and run model (docs/design.md §5), as pure functions over plain data: a `wf-`
 * node's `steps` parsed and checked, the initial run state, the committed step moves
 * (claim, verdict, fail-fast) and dependency release. No I/O here: operations.ts reads the
 * graph and the lease table and commits what these functions return.
 */
import { createHash } from 'node:crypto';
import type { Frontmatter } from '../../kernel/codec.js';

export const STEP_STATES = ['pending', 'ready', 'claimed', 'succeeded', 'failed', 'skipped'] as const;
export type StepState = (typeof STEP_STATES)[number];
export type Verdict = 'succeeded' | 'failed';

export const LIMITS = {
  steps: 100,
  stepTitleChars: 200,
  maxAttempts: 100,
  inputsBytes: 8 * 1024,
  resultBytes: 4 * 1024,
  logChars: 4000,
  iterationMax: 1_000_000,
} as const;

const SLUG = /^[a-z0-9][a-z0-9-]*$/;

/** One step of a workflow definition, defaults applied. */
export interface StepDef {
  id: string;
  title: string;
  needs: string[];
  capability: string | null;
  approval: boolean;
  max_attempts: number;
}

/** The holder of a step lease as committed in the run node (its expiry is operational state). */
export interface CommittedLease {
  by: string;
  agent: string | null;
  session: string | null;
  generation: number;
  claimed_at: string;
  iteration?: number;
}

/** One reported verdict, kept so a retry of the same generation can be recognised. */
export interface VerdictRecord {
  generation: number;
  status: Verdict;
  at: string;
  by: string;
  agent: string | null;
  iteration: number | null;
  /** sha-256 (first 16 hex) of the canonical JSON of `result` (null when none was sent) */
  result_sha: string | null;
}

/** A step inside the run node's `state.steps`: its definition snapshot plus its progress. */
export interface RunStep {
  title: string;
  needs: string[];
  capability?: string;
  approval?: boolean;
  max_attempts: number;
  state: StepState;
  /** leases issued so far: each claim (not a renewal) issues generation + 1 */
  generation: number;
  /** verdicts reported so far */
  attempts: number;
  lease?: CommittedLease;
  result?: unknown;
  log?: string;
  iteration?: number;
  verdicts: VerdictRecord[];
  finished_at?: string;
}

export interface RunState {
  /** step ids in the workflow's order (object key order is not reliable for numeric-looking ids) */
  order: string[];
  steps: Record<string, RunStep>;
  finished_at?: string;
}

export interface Lineage {
  workflow: string;
  workflow_version: string;
  initiator: string;
  initiator_agent?: string;
  inputs: Record<string, unknown>;
}

export interface StepProblem {
  field: string;
  message: string;
}

// ---------------------------------------------------------------- workflow definition

/** Parses a workflow's `steps`; returns the definition or the list of problems (never throws). */
export function parseSteps(raw: unknown): { steps: StepDef[]; problems: StepProblem[] } {
  const problems: StepProblem[] = [];
  if (!Array.isArray(raw) || raw.length === 0)
    return { steps: [], problems: [{ field: 'steps', message: 'must be a non-empty list of steps' }] };
  if (raw.length > LIMITS.steps) problems.push({ field: 'steps', message: `at most ${LIMITS.steps} steps` });
  const steps: StepDef[] = [];
  const ids = new Set<string>();
  raw.forEach((entry, i) => {
    const at = `steps[${i}]`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) {
      problems.push({ field: at, message: 'must be a mapping' });
      return;
    }
    const s = entry as Record<string, unknown>;
    if (typeof s.id !== 'string' || !SLUG.test(s.id) || s.id.length > 100) {
      problems.push({ field: `${at}.id`, message: 'must be a kebab-case slug of at most 100 characters' });
      return;
    }
    if (ids.has(s.id)) problems.push({ field: `${at}.id`, message: `'${s.id}' is duplicated` });
    ids.add(s.id);
    let title = s.id;
    if (s.title !== undefined && s.title !== null) {
      if (typeof s.title !== 'string' || s.title.trim() === '' || s.title.length > LIMITS.stepTitleChars || /[\r\n]/.test(s.title)) {
        problems.push({ field: `${at}.title`, message: `must be a single-line string of at most ${LIMITS.stepTitleChars} characters` });
      } else title = s.title;
    }
    let needs: string[] = [];
    if (s.needs !== undefined && s.needs !== null) {
      if (!Array.isArray(s.needs) || s.needs.some((n) => typeof n !== 'string'))
        problems.push({ field: `${at}.needs`, message: 'must be a list of step ids' });
      else needs = [...new Set(s.needs as string[])];
    }
    let capability: string | null = null;
    if (s.capability !== undefined && s.capability !== null) {
      if (typeof s.capability !== 'string' || !SLUG.test(s.capability) || s.capability.length > 100) {
        problems.push({ field: `${at}.capability`, message: 'must be a kebab-case slug' });
      } else capability = s.capability;
    }
    let approval = false;
    if (s.approval !== undefined && s.approval !== null) {
      if (typeof s.approval !== 'boolean') problems.push({ field: `${at}.approval`, message: 'must be true or false' });
      else approval = s.approval;
    }
    let maxAttempts = 1;
    if (s.max_attempts !== undefined && s.max_attempts !== null) {
      if (
        typeof s.max_attempts !== 'number' ||
        !Number.isInteger(s.max_attempts) ||
        s.max_attempts < 1 ||
        s.max_attempts > LIMITS.maxAttempts
      ) {
        problems.push({ field: `${at}.max_attempts`, message: `must be an integer 1-${LIMITS.maxAttempts}` });
      } else maxAttempts = s.max_attempts;
    }
    steps.push({ id: s.id, title, needs, capability, approval, max_attempts: maxAttempts });
  });
  steps.forEach((step, i) => {
    for (const need of step.needs) {
      if (need === step.id) problems.push({ field: `steps[${i}].needs`, message: 'a step cannot need itself' });
      else if (!ids.has(need)) problems.push({ field: `steps[${i}].needs`, message: `names unknown step '${need}'` });
    }
  });
  if (problems.length === 0) {
    const cycle = findCycle(steps);
    if (cycle) problems.push({ field: 'steps', message: `needs form a cycle: ${cycle.join(' -> ')}` });
  }
  return { steps, problems };
}

/** A dependency cycle as a path of step ids, or null. */
function findCycle(steps: StepDef[]): string[] | null {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const mark = new Map<string, 'visiting' | 'done'>();
  const walk = (id: string, path: string[]): string[] | null => {
    if (mark.get(id) === 'done') return null;
    if (mark.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    mark.set(id, 'visiting');
    for (const need of byId.get(id)?.needs ?? []) {
      const found = walk(need, [...path, id]);
      if (found) return found;
    }
    mark.set(id, 'done');
    return null;
  };
  for (const s of steps) {
    const found = walk(s.id, []);
    if (found) return found;
  }
  return null;
}

/** The state of a new run: steps without needs are ready, the others pending. */
export function initialState(steps: StepDef[]): RunState {
  const state: RunState = { order: steps.map((s) => s.id), steps: {} };
  for (const def of steps) {
    const step: RunStep = {
      title: def.title,
      needs: def.needs,
      max_attempts: def.max_attempts,
      state: def.needs.length === 0 ? 'ready' : 'pending',
      generation: 0,
      attempts: 0,
      verdicts: [],
    };
    if (def.capability) step.capability = def.capability;
    if (def.approval) step.approval = true;
    state.steps[def.id] = step;
  }
  return state;
}

// ---------------------------------------------------------------- reading a run node

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * The run state of a run node's frontmatter, or null when it is not well formed (a run node
 * edited by hand into something this plugin did not write: nothing of it is claimable).
 */
export function readState(fm: Frontmatter): RunState | null {
  const raw = fm.state;
  if (!isObject(raw) || !isObject(raw.steps) || !Array.isArray(raw.order)) return null;
  const steps: Record<string, RunStep> = {};
  for (const sid of raw.order) {
    if (typeof sid !== 'string') return null;
    const s = raw.steps[sid];
    if (!isObject(s) || !STEP_STATES.includes(s.state as StepState)) return null;
    if (typeof s.generation !== 'number' || typeof s.attempts !== 'number' || typeof s.max_attempts !== 'number') return null;
    steps[sid] = {
      ...(s as unknown as RunStep),
      needs: Array.isArray(s.needs) ? s.needs.filter((n): n is string => typeof n === 'string') : [],
      verdicts: Array.isArray(s.verdicts) ? (s.verdicts.filter(isObject) as unknown as VerdictRecord[]) : [],
    };
  }
  return { ...(raw as unknown as RunState), order: raw.order as string[], steps };
}

export function readLineage(fm: Frontmatter): Lineage | null {
  const raw = fm.lineage;
  if (!isObject(raw) || typeof raw.workflow !== 'string') return null;
  return raw as unknown as Lineage;
}

// ---------------------------------------------------------------- moves

const FINAL: ReadonlySet<StepState> = new Set(['succeeded', 'failed', 'skipped']);
export const isFinal = (s: StepState) => FINAL.has(s);

/** Pending steps whose needs all succeeded (or were skipped) become ready. */
export function releaseReady(state: RunState): void {
  for (const sid of state.order) {
    const step = state.steps[sid]!;
    if (step.state !== 'pending') continue;
    if (step.needs.every((n) => state.steps[n]?.state === 'succeeded' || state.steps[n]?.state === 'skipped')) step.state = 'ready';
  }
}

/** The run status the steps imply: succeeded when every step succeeded or was skipped, failed when one failed. */
export function runOutcome(state: RunState): 'running' | 'succeeded' | 'failed' {
  let allDone = true;
  for (const sid of state.order) {
    const s = state.steps[sid]!.state;
    if (s === 'failed') return 'failed';
    if (s !== 'succeeded' && s !== 'skipped') allDone = false;
  }
  return allDone ? 'succeeded' : 'running';
}

/** Fail fast: when the run fails, every step not yet finished is skipped (claimed ones lose their lease). */
export function skipUnfinished(state: RunState, at: string): string[] {
  const superseded: string[] = [];
  for (const sid of state.order) {
    const step = state.steps[sid]!;
    if (isFinal(step.state)) continue;
    if (step.state === 'claimed') superseded.push(sid);
    step.state = 'skipped';
    delete step.lease;
    step.finished_at = at;
  }
  return superseded;
}

// ---------------------------------------------------------------- outcomes

/** JSON with object keys sorted, so equal values give equal text whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function resultSha(result: unknown): string | null {
  if (result === undefined) return null;
  return createHash('sha256').update(canonicalJson(result)).digest('hex').slice(0, 16);
}

/** How a retried verdict differs from the recorded one (empty: the same outcome). */
export function outcomeDifferences(recorded: VerdictRecord, status: Verdict, sha: string | null, iteration: number | null): string[] {
  const diffs: string[] = [];
  if (recorded.status !== status) diffs.push('status');
  if (recorded.result_sha !== sha) diffs.push('result');
  if (iteration !== null && recorded.iteration !== iteration) diffs.push('iteration');
  return diffs;
}
