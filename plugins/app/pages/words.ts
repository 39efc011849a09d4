/**
 * Names and words instead of ids and internals (issue 25 item 1): a person id shows as the
 * person's name linked to their node, field values that are person ids too, and a history
 * entry reads as a sentence ("Ada set status to done", "Ada created task “Fix login”",
 * "Ada edited the body") built from the commit's operation and its change to the file.
 */
import { isSvcError } from '../../../kernel/errors.js';
import { html, type Html } from '../html.js';
import type { Signed } from '../host.js';
import type { AnswerOf } from '../operations-bridge.js';
import type { getNodeHistory } from '../../history/api.js';

type HistoryItem = AnswerOf<typeof getNodeHistory>['history'][number];

/** The name a person goes by (their node's `name`, else its title); null when the id is not a person of the tenant. */
export function personName(s: Signed, id: string): string | null {
  const r = s.bridge.tenant.index.get(id);
  if (!r || r.type !== 'person') return null;
  return String(r.frontmatter.name ?? r.title);
}

/** A person's name linked to their node; anything that is not a person id stays as written. */
export function personLink(s: Signed, id: string): Html {
  const name = personName(s, id);
  return name ? html`<a href="/app/nodes/${encodeURIComponent(id)}" class="person">${name}</a>` : html`${id}`;
}

/** A node id as its title linked (a person by name); any other text as written. */
function refLink(s: Signed, v: string): Html {
  if (personName(s, v)) return personLink(s, v);
  const r = /^[a-z0-9][a-z0-9-]*$/.test(v) ? s.bridge.tenant.index.get(v) : undefined;
  return r ? html`<a href="/app/nodes/${encodeURIComponent(v)}">${r.title}</a>` : html`${v}`;
}

/** A frontmatter value for people: node ids (a project, a person) as linked titles and names, also inside lists; other values as text. */
export function fieldValueHtml(s: Signed, v: unknown): Html {
  if (v === null || v === undefined) return html``;
  if (typeof v === 'string') return refLink(s, v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string'))
    return html`${(v as string[]).map((x, i) => html`${i ? ', ' : ''}${refLink(s, x)}`)}`;
  return html`${typeof v === 'object' ? JSON.stringify(v) : String(v)}`;
}

/** Fields that record who and how, not what: shown under "Details". */
export const STAMP_FIELDS = new Set([
  'author',
  'authored_via',
  'priority_by',
  'priority_via',
  'priority_at',
  'readiness_by',
  'readiness_via',
  'readiness_at',
  'created',
  'updated',
]);

/** Operations whose sentence needs the change itself (the value set, the edge added). */
const NEEDS_PATCH = new Set([
  'set_status',
  'set_priority',
  'set_readiness',
  'add_edge',
  'remove_edge',
  'patch_node',
  'put_node',
  'link_commit',
]);
/** At most this many changes are read for their words per page (each is a git diff); older ones say what operation ran. */
const PATCHES_READ = 12;
/**
 * Parsed changes by tenant, node and commit: a commit never changes, so a live page that
 * reloads on every event reads each diff once. Names are resolved when the sentence is built.
 */
const changeCache = new Map<string, Change>();
const CHANGE_CACHE_MAX = 5000;

const FIELD_WORDS: Record<string, string> = { title: 'the title', summary: 'the summary', project: 'the project', body: 'the body' };

interface Change {
  /** top-level frontmatter keys with their added (+) and removed (-) values */
  added: Map<string, string>;
  removed: Map<string, string>;
  edgesAdded: Array<{ type: string; to: string }>;
  edgesRemoved: Array<{ type: string; to: string }>;
  body: boolean;
  created: boolean;
}

/** Reads a unified diff of one node file: which frontmatter keys, edges and body lines changed. */
function readPatch(patch: string, change: string): Change {
  const c: Change = { added: new Map(), removed: new Map(), edgesAdded: [], edgesRemoved: [], body: false, created: change === 'A' };
  // each hunk starts in the frontmatter unless it passes the closing --- (a hunk from line 1 first passes the opening one)
  let inBody = false;
  let expectOpen = false;
  let pendingEdge: { sign: string; type: string } | null = null;
  for (const line of patch.split('\n')) {
    if (
      line.startsWith('+++') ||
      line.startsWith('--- ') ||
      line.startsWith('diff ') ||
      line.startsWith('index ') ||
      line.startsWith('new file')
    )
      continue;
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(line);
    if (hunk) {
      inBody = false;
      expectOpen = hunk[1] === '1';
      continue;
    }
    const sign = line[0] ?? ' ';
    const text = line.slice(1);
    if (text === '---') {
      if (expectOpen) expectOpen = false;
      else inBody = true;
      continue;
    }
    if (inBody) {
      if (sign === '+' || sign === '-') c.body = true;
      continue;
    }
    if (sign !== '+' && sign !== '-') continue;
    const key = /^([a-z_][a-z0-9_-]*):\s?(.*)$/.exec(text);
    if (key) {
      (sign === '+' ? c.added : c.removed).set(key[1]!, key[2]!);
      continue;
    }
    const edgeType = /^\s+- type: (.+)$/.exec(text);
    if (edgeType) {
      pendingEdge = { sign, type: edgeType[1]! };
      continue;
    }
    const edgeTo = /^\s+to: (.+)$/.exec(text);
    if (edgeTo && pendingEdge && pendingEdge.sign === sign) {
      (sign === '+' ? c.edgesAdded : c.edgesRemoved).push({ type: pendingEdge.type, to: edgeTo[1]! });
      pendingEdge = null;
    }
  }
  return c;
}

/** The words of one change, after the actor's name. */
function sentence(s: Signed, op: string, c: Change | null, nodeType: string, title: string): Html {
  const target = (id: string) =>
    html`${personName(s, id) ? personLink(s, id) : html`<a href="/app/nodes/${encodeURIComponent(id)}">${s.bridge.tenant.index.get(id)?.title ?? id}</a>`}`;
  if (op === 'claim') return html`claimed it`;
  if (op === 'release') return html`released it`;
  if (!c) return html`${op.replace(/_/g, ' ')}`;
  if (c.created) return html`created ${nodeType} “${title}”`;
  const parts: Html[] = [];
  const status = c.added.get('status');
  if (status) parts.push(html`set status to ${status}`);
  if (c.added.has('priority')) parts.push(html`set priority to ${c.added.get('priority')}`);
  else if (c.removed.has('priority')) parts.push(html`cleared the priority`);
  if (c.added.has('readiness')) parts.push(html`marked it ready for ${c.added.get('readiness')}`);
  else if (c.removed.has('readiness')) parts.push(html`cleared its readiness`);
  for (const e of c.edgesAdded)
    parts.push(e.type === 'assigned' ? html`assigned ${target(e.to)}` : html`added a ${e.type} link to ${target(e.to)}`);
  for (const e of c.edgesRemoved)
    parts.push(e.type === 'assigned' ? html`unassigned ${target(e.to)}` : html`removed the ${e.type} link to ${target(e.to)}`);
  const edited = [...new Set([...c.added.keys(), ...c.removed.keys()])].filter(
    (k) =>
      !STAMP_FIELDS.has(k) &&
      !['status', 'priority', 'readiness', 'edges'].includes(k) &&
      !k.startsWith('priority_') &&
      !k.startsWith('readiness_'),
  );
  if (c.body) edited.push('body');
  if (edited.length)
    parts.push(
      html`edited ${edited
        .map((k) => FIELD_WORDS[k] ?? `the ${k.replace(/_/g, ' ')}`)
        .join(', ')
        .replace(/, ([^,]*)$/, ' and $1')}`,
    );
  if (!parts.length) return html`saved it unchanged (${op.replace(/_/g, ' ')})`;
  return html`${parts.map((p, i) => html`${i === 0 ? '' : i === parts.length - 1 ? ' and ' : ', '}${p}`)}`;
}

/**
 * Each history entry as a sentence with the actor's name linked. The newest changes are read
 * for their values (the operations that need them), in parallel; the node's creation is
 * known from the first commit without reading it.
 */
export async function describeHistory(
  s: Signed,
  id: string,
  entries: HistoryItem[],
  total: number,
): Promise<Array<{ entry: HistoryItem; who: Html; what: Html }>> {
  const record = s.bridge.tenant.index.get(id);
  const nodeType = record?.type ?? 'node';
  const title = record?.title ?? id;
  let budget = PATCHES_READ;
  const jobs = entries.map(async (entry, i) => {
    const op = entry.message.split(':')[0]!.trim();
    const oldest = entries.length === total && i === entries.length - 1;
    let change: Change | null = null;
    if (oldest) change = { added: new Map(), removed: new Map(), edgesAdded: [], edgesRemoved: [], body: false, created: true };
    else if (NEEDS_PATCH.has(op)) {
      const key = `${s.bridge.tenant.org}\0${id}\0${entry.sha}`;
      change = changeCache.get(key) ?? null;
      if (!change && budget-- > 0) {
        // a change the history cannot show (a file moved away) keeps its operation's name: the page still renders
        const d = await s.bridge.getHistoryEntry(id, entry.sha).catch((err: unknown) => {
          if (isSvcError(err) && err.status < 500) return null;
          throw err;
        });
        if (d) {
          change = readPatch(String(d.patch), String(d.change));
          if (changeCache.size >= CHANGE_CACHE_MAX) changeCache.delete(changeCache.keys().next().value!);
          changeCache.set(key, change);
        }
      }
    }
    const who = personName(s, entry.actor) ? personLink(s, entry.actor) : html`${entry.actor_name ?? entry.actor}`;
    return { entry, who, what: sentence(s, op, change, nodeType, title) };
  });
  return Promise.all(jobs);
}

/** Server text that names people by id (a queue item's `why`: "Proposed by person-7ba6…") with each id as the linked name. */
export function namesIn(s: Signed, text: string): Html {
  const parts = text.split(/\b(person-[a-z0-9][a-z0-9-]*)/);
  return html`${parts.map((part, i) => (i % 2 === 1 && personName(s, part) ? personLink(s, part) : html`${part}`))}`;
}

/** The sentence of one change whose diff is at hand (the history entry page). */
export function describeChange(s: Signed, id: string, message: string, patch: string, change: string): Html {
  const record = s.bridge.tenant.index.get(id);
  const op = message.split(':')[0]!.trim();
  return sentence(s, op, readPatch(patch, change), record?.type ?? 'node', record?.title ?? id);
}
