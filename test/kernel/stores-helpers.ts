/** Shared by the operational store tests (test/kernel/stores*.test.ts). */
import { newTokenRecord, type TokenRecord } from '../../kernel/auth.js';

export async function until(check: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let seq = 0;
export const orgName = () => `org-${process.pid}-${++seq}`;

export function record(token: string, person = 'person-a'): TokenRecord {
  return newTokenRecord(token, { kind: 'pat', person, created: new Date().toISOString() });
}
