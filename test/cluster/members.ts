/**
 * Cluster test helpers: real `workgraph serve` processes (the CLI shim and the server it
 * re-executes, one process group each) sharing one data directory and one PostgreSQL schema.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import type { Cluster } from '../../kernel/cluster/ownership.js';
import { cleanEnv, groupAlive, killGroup, runCli, SHIM } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

export interface Member {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: boolean;
}

export interface ClusterEnv {
  dataDir: string;
  databaseUrl: string;
  leaseMs: number;
  bootstrapToken: string;
}

export function memberEnv(c: ClusterEnv, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: '0',
    SVC_DATA_DIR: c.dataDir,
    SVC_DATABASE_URL: c.databaseUrl,
    SVC_CLUSTER_LEASE_MS: String(c.leaseMs),
    SVC_BOOTSTRAP_TOKEN: c.bootstrapToken,
    ...extra,
  };
}

export const members = new Set<Member>();

/** Starts one member (fsync on, as in production) and resolves once it listens. */
export function startMember(c: ClusterEnv, extra: Record<string, string> = {}): Promise<Member> {
  const child = spawn(process.execPath, [SHIM, 'serve'], {
    env: cleanEnv(memberEnv(c, extra)),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const member: Member = { child, url: '', output: () => out, exited: false };
  members.add(member);
  child.once('exit', () => (member.exited = true));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 60 s: ${out}`)), 60_000);
    child.stdout!.on('data', () => {
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m && !member.url) {
        clearTimeout(timer);
        member.url = m[1]!;
        resolve(member);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`member exited ${code}: ${out}`));
    });
  });
}

export async function stopAll(): Promise<void> {
  for (const m of members) {
    if (groupAlive(m.child.pid!)) {
      try {
        process.kill(-m.child.pid!, 'SIGCONT');
      } catch {
        /* gone */
      }
      await killGroup(m.child, 'SIGKILL');
    }
  }
  members.clear();
}

/** What `workgraph cluster status` prints. */
export type Status = Awaited<ReturnType<Cluster['status']>>;

export async function clusterStatus(c: ClusterEnv): Promise<Status> {
  const r = await runCli(['cluster', 'status'], memberEnv(c));
  if (r.code !== 0) throw new Error(`cluster status failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Status;
}

/** Polls `cluster status` until `ok` holds (or throws after `ms`). */
export async function waitForStatus(c: ClusterEnv, ok: (s: Status) => boolean, ms = 60_000): Promise<Status> {
  let last: Status | null = null;
  return until(
    async () => {
      last = await clusterStatus(c);
      return ok(last) ? last : undefined;
    },
    () => `cluster status to settle; it read ${JSON.stringify(last)}`,
    ms,
    { every: 300 },
  );
}

/** The member serving `org` right now, by its URL. */
export function ownerMember(status: Status, org: string): Member | undefined {
  const t = status.tenants.find((x) => x.org === org);
  if (!t || t.expired || !t.url) return undefined;
  return [...members].find((m) => m.url === t.url && !m.exited);
}

/** Whether `org` has a live owner with an unexpired lease that the status names among its members. */
/**
 * `ownedIn`, and by the member the tenant prefers among the live ones: no rebalancing hand-off is
 * coming (one moved a tenant away between a test's look at its owner and the SIGSTOP it sent)
 */
export function settledIn(org: string): (s: Status) => boolean {
  const owned = ownedIn(org);
  return (s) => owned(s) && s.tenants.some((t) => t.org === org && t.owner === t.preferred);
}

export function ownedIn(org: string): (s: Status) => boolean {
  return (s) => {
    const t = s.tenants.find((x) => x.org === org);
    return !!t && !t.expired && !!t.url && s.members.some((m) => m.live && m.url === t.url) && !!ownerMember(s, org);
  };
}
export async function api(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(base + path, {
    method,
    // a fresh connection per request: a member paused (SIGSTOP) past its 5 s keep-alive drops idle
    // pooled sockets the moment it resumes, which would cut a request sent on one meanwhile
    headers: {
      authorization: `Bearer ${token}`,
      connection: 'close',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

export function fsck(gitDir: string): { status: number | null; output: string } {
  const res = spawnSync('git', ['--git-dir', gitDir, 'fsck', '--full', '--strict', '--no-progress', '--no-dangling'], { encoding: 'utf8' });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

export function git(gitDir: string, args: string[]): string {
  const res = spawnSync('git', ['--git-dir', gitDir, ...args], { encoding: 'utf8' });
  return res.stdout.trim();
}
