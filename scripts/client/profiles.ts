/**
 * Named profiles (one per server and tenant) in `$XDG_CONFIG_HOME/workgraph/profiles.json`
 * (default `~/.config/workgraph/`): the directory 0700, the file 0600, written whole and
 * renamed so a crash never leaves half a file. A profile signed in through OAuth keeps its
 * refresh token and the current short-lived access token; nothing else stores credentials.
 */
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Profile {
  server: string;
  org?: string;
  person?: string | null;
  /** the OAuth client registered at login (public client, PKCE) */
  client_id?: string;
  refresh_token?: string;
  access_token?: string;
  /** ms since epoch */
  access_expires_at?: number;
}

export interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
}

export function configDir(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'workgraph');
}

export function profilesPath(): string {
  return join(configDir(), 'profiles.json');
}

export function readProfiles(): ProfileFile {
  try {
    const parsed = JSON.parse(readFileSync(profilesPath(), 'utf8')) as ProfileFile;
    return { ...(parsed.current ? { current: parsed.current } : {}), profiles: parsed.profiles ?? {} };
  } catch {
    return { profiles: {} };
  }
}

export function writeProfiles(file: ProfileFile): void {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = profilesPath();
  const tmp = `${path}.${process.pid}.tmp`;
  // created 0600 from the first byte: the refresh token is never readable by others, not even briefly
  writeFileSync(tmp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/**
 * Runs `fn` holding the profiles lock (an exclusively created lock file). Refresh tokens rotate
 * and a reused one revokes the whole grant, so two CLI runs must never refresh at once.
 */
export async function withProfilesLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(configDir(), { recursive: true, mode: 0o700 });
  const lock = join(configDir(), 'profiles.lock');
  const started = Date.now();
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // a lock older than 30 s belongs to a run that died
      try {
        if (Date.now() - statSync(lock).mtimeMs > 30_000) rmSync(lock, { force: true });
      } catch {
        /* gone meanwhile */
      }
      if (Date.now() - started > 60_000) throw new Error(`profiles are locked by another workgraph run (${lock})`, { cause: err });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** The profile name this run uses: --profile, else SVC_PROFILE (WORKGRAPH_PROFILE), else the current one. */
export function selectedProfileName(flag: string | undefined): string | undefined {
  return flag ?? process.env.SVC_PROFILE ?? process.env.WORKGRAPH_PROFILE ?? readProfiles().current;
}
