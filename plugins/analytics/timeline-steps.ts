/**
 * A node's status steps and what analytics reads of them (timeline.ts `timesOf`), as pure
 * functions of the steps and two predicates, so the compaction that keeps a node's steps from
 * growing with its history can be checked against the full list (test/plugins/analytics/
 * timeline-compaction.test.ts).
 */

export interface StatusStep {
  status: string;
  /** commit time (ms) the node entered `status` */
  at: number;
}

export type StatusTest = (status: string) => boolean;

export interface StepTimes {
  createdAt: number;
  /** set when the last step is terminal: the time the node entered it */
  completedAt: number | null;
  openedAt: number;
  startedAt: number | null;
  activeSince: number | null;
  statusSince: number;
}

/**
 * Walks the steps (at least one) the way completion, cycle and WIP times need: the trailing
 * run of terminal steps (the completion), the stretch of non-terminal steps before it (or the
 * current one) and its first active step, and the trailing run of active steps (WIP age, only
 * while the node is neither terminal nor `doneOtherwise`, i.e. made done by an edge).
 */
export function stepTimes(steps: readonly StatusStep[], terminal: StatusTest, active: StatusTest, doneOtherwise: boolean): StepTimes {
  const last = steps[steps.length - 1]!;
  let completedAt: number | null = null;
  /** index of the first step of the trailing terminal run (steps.length when not terminal) */
  let end = steps.length;
  if (terminal(last.status)) {
    completedAt = last.at;
    while (end > 0 && terminal(steps[end - 1]!.status)) end--;
  }
  // The stretch that led to the completion (or the current one) starts after the last earlier terminal step.
  let begin = end;
  while (begin > 0 && !terminal(steps[begin - 1]!.status)) begin--;
  let startedAt: number | null = null;
  for (let i = begin; i < end; i++) {
    if (active(steps[i]!.status)) {
      startedAt = steps[i]!.at;
      break;
    }
  }
  let activeSince: number | null = null;
  if (completedAt === null && !doneOtherwise && active(last.status)) {
    let i = steps.length - 1;
    while (i > 0 && active(steps[i - 1]!.status)) i--;
    activeSince = steps[i]!.at;
  }
  const openedAt = steps[Math.min(begin, steps.length - 1)]!.at;
  return { createdAt: steps[0]!.at, completedAt, openedAt, startedAt, activeSince, statusSince: last.at };
}

/**
 * The steps `stepTimes` can still read, now or after any steps appended later; the others are
 * dropped (the result is the same array when none can be). `stepTimes` only ever reads:
 *
 *   - the first step (creation) and the last (current status, completion);
 *   - B, the first step of the last run of non-terminal steps, and the step before it (a
 *     terminal one, where the walk back from a completion stops): the stretch any later
 *     completion or the current state opens at;
 *   - the first active step from B on in that run (the start of work);
 *   - A, the first step of the trailing run of active steps, and the step before it (where the
 *     WIP walk stops).
 *
 * Every walk moves over steps of one class (terminal / non-terminal / active) and stops at
 * the first step outside it, and the kept steps keep each walk's stop: at most seven steps
 * remain, whatever the history. The classes come from the schema, so the result holds only
 * while `terminal` and `active` mean what they meant here (timeline.ts replays the history
 * when the status rules change).
 */
export function compactSteps(steps: StatusStep[], terminal: StatusTest, active: StatusTest): StatusStep[] {
  const n = steps.length;
  if (n <= 7) return steps;
  let e = n;
  while (e > 0 && terminal(steps[e - 1]!.status)) e--;
  let b = e;
  while (b > 0 && !terminal(steps[b - 1]!.status)) b--;
  const keep = new Set<number>([0, n - 1]);
  if (b < e) {
    keep.add(b);
    if (b > 0) keep.add(b - 1);
    for (let i = b; i < e; i++) {
      if (active(steps[i]!.status)) {
        keep.add(i);
        break;
      }
    }
  }
  let a = n;
  while (a > 0 && active(steps[a - 1]!.status)) a--;
  if (a < n) {
    keep.add(a);
    if (a > 0) keep.add(a - 1);
  }
  if (keep.size === n) return steps;
  return [...keep].sort((x, y) => x - y).map((i) => steps[i]!);
}
