/**
 * `workgraph import <beads|backlog|github> <path>`: reads a source export, then sends the
 * normalized items to POST /v1/import in batches (remote: SVC_SERVER + SVC_TOKEN), or runs the
 * same operation in-process on SVC_DATA_DIR (local: the server must be stopped; the data
 * directory's lock says so). Prints a progress bar on a terminal and ends with a summary table
 * (or `--json`).
 */
import { SingleBar } from 'cli-progress';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { configFromEnv, createLogger } from '../../kernel/config.js';
import type { OpContext } from '../../kernel/plugin.js';
import { startKernel } from '../../kernel/server.js';
import type { ImportItem, ItemResult } from '../../plugins/import/model.js';
import { MAX_ITEMS_PER_REQUEST } from '../../plugins/import/model.js';
import { invoke } from '../../kernel/operation.js';
import { importItems } from '../../plugins/import/api.js';
import { allPlugins } from '../plugins.js';
import { readBacklog, readBeads, readGithub, type ReadResult } from './readers.js';

export const IMPORT_HELP = `usage: workgraph import <beads|backlog|github> <path> [--json]
  beads    <issues.jsonl>      beads' JSONL export (.beads/issues.jsonl)
  backlog  <folder>            a Backlog.md backlog/ folder (or the folder holding it)
  github   <issues.json>       gh issue list --json number,title,body,state,labels,assignees,milestone,createdAt,closedAt,author
Remote (a running server): SVC_SERVER and SVC_TOKEN (an admin's token), SVC_ORG optional.
Local (server stopped): SVC_DATA_DIR, with SVC_TOKEN or the first-start admin-token file.
A second import of a newer export updates what changed (items keep their source id).`;

/** Batches under the 1 MB request limit and the per-request item cap. */
function batches(items: ImportItem[], maxBytes = 900_000): ImportItem[][] {
  const out: ImportItem[][] = [];
  let current: ImportItem[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item)) + 1;
    if (current.length > 0 && (bytes + size > maxBytes || current.length >= MAX_ITEMS_PER_REQUEST)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

interface Sender {
  send(body: { source: string; items: ImportItem[]; deleted: number }): Promise<{ results: ItemResult[]; summary: Record<string, number> }>;
  close(): Promise<void>;
}

async function remoteSender(server: string, token: string, org: string | undefined): Promise<Sender> {
  const base = server.replace(/\/+$/, '');
  const me = await fetch(`${base}/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  if (me.status !== 200) throw new Error(`${base}/v1/me answered ${me.status}: is SVC_TOKEN valid?`);
  const who = (await me.json()) as { org: string; is_admin: boolean };
  if (org && who.org !== org) throw new Error(`SVC_TOKEN belongs to org '${who.org}', not SVC_ORG '${org}'`);
  if (!who.is_admin) throw new Error('importing needs an admin token');
  return {
    async send(body) {
      const res = await fetch(`${base}/v1/import`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`POST /v1/import answered ${res.status}: ${text.slice(0, 500)}`);
      return JSON.parse(text) as { results: ItemResult[]; summary: Record<string, number> };
    },
    close: async () => undefined,
  };
}

async function localSender(token: string | undefined, org: string | undefined): Promise<Sender> {
  const config = configFromEnv();
  const kernel = await startKernel({ config, plugins: allPlugins, log: createLogger(undefined, true) });
  try {
    const bearer = token ?? readFileSync(join(config.dataDir, 'admin-token'), 'utf8').trim();
    const { tenant, actor } = kernel.services.tenants.authenticate(bearer);
    if (org && tenant.org !== org) throw new Error(`the token belongs to org '${tenant.org}', not SVC_ORG '${org}'`);
    const ctx: OpContext = { tenant, actor, via: 'rest', services: kernel.services, headers: {} };
    return {
      send: (body) => invoke(importItems, ctx, body) as Promise<{ results: ItemResult[]; summary: Record<string, number> }>,
      close: () => kernel.close(),
    };
  } catch (err) {
    await kernel.close();
    throw err;
  }
}

function read(source: string, path: string): ReadResult {
  if (source === 'beads') return readBeads(path);
  if (source === 'backlog') return readBacklog(path);
  if (source === 'github') return readGithub(path);
  throw new Error(`unknown source '${source}' (beads, backlog or github)`);
}

export interface ImportReport {
  source: string;
  items: number;
  created: number;
  updated: number;
  unchanged: number;
  refused: number;
  deleted_skipped: number;
  people_created: number;
  refusals: Array<{ source_id: string; reason: string }>;
  warnings: string[];
}

export async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help || positionals.length < 2) {
    process.stdout.write(IMPORT_HELP + '\n');
    if (!values.help) process.exitCode = 2;
    return;
  }
  const [source, path] = positionals as [string, string];
  const read_ = read(source, path);
  const server = process.env.SVC_SERVER ?? process.env.WORKGRAPH_SERVER;
  const token = process.env.SVC_TOKEN ?? process.env.WORKGRAPH_TOKEN;
  const org = process.env.SVC_ORG ?? process.env.WORKGRAPH_ORG;
  if (server && !token) throw new Error('remote import needs SVC_TOKEN');
  const sender = server ? await remoteSender(server, token!, org) : await localSender(token, org);
  const bar = process.stderr.isTTY
    ? new SingleBar({ format: `importing ${source} [{bar}] {value}/{total} items | {eta_formatted} left`, stream: process.stderr })
    : null;
  const report: ImportReport = {
    source,
    items: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    refused: 0,
    deleted_skipped: read_.deleted,
    people_created: 0,
    refusals: [],
    warnings: read_.warnings,
  };
  try {
    bar?.start(read_.items.length, 0);
    let first = true;
    for (const batch of batches(read_.items)) {
      const answer = await sender.send({ source: read_.source, items: batch, deleted: first ? read_.deleted : 0 });
      first = false;
      for (const key of ['items', 'created', 'updated', 'unchanged', 'refused', 'people_created'] as const)
        report[key] += answer.summary[key] ?? 0;
      for (const r of answer.results)
        if (r.status === 'refused') report.refusals.push({ source_id: r.source_id, reason: r.reason ?? r.code ?? 'refused' });
      bar?.increment(batch.length);
    }
  } finally {
    bar?.stop();
    await sender.close();
  }
  if (values.json) return void process.stdout.write(JSON.stringify(report) + '\n');
  const rows: Array<[string, number]> = [
    ['items read', report.items],
    ['created', report.created],
    ['updated', report.updated],
    ['unchanged (skipped)', report.unchanged],
    ['deleted in the source (skipped)', report.deleted_skipped],
    ['refused', report.refused],
    ['people created', report.people_created],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = [`import ${source} from ${path}`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${String(v).padStart(6)}`)];
  for (const r of report.refusals) lines.push(`  refused ${r.source_id}: ${r.reason}`);
  if (report.warnings.length > 0)
    lines.push(`  ${report.warnings.length} reader warnings (dropped links, unreadable files): --json lists them`);
  process.stdout.write(lines.join('\n') + '\n');
}
