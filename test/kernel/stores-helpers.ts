/** Shared by the operational store tests (test/kernel/stores*.test.ts). */
import { newTokenRecord, type TokenRecord } from '../../kernel/auth.js';

let seq = 0;
export const orgName = () => `org-${process.pid}-${++seq}`;

export function record(token: string, person = 'person-a'): TokenRecord {
  return newTokenRecord(token, { kind: 'pat', person, created: new Date().toISOString() });
}
