/**
 * The identity authority the kernel hands this plugin at boot (kernel/identity-guard.ts): the
 * only capability that lets a write change an identity fact (people, admin rights, agent
 * ownership). Identity operations pass it in their write's meta; nothing else in the plugin
 * set holds it. Several kernels in one process (tests) each hand one over: any is valid.
 */
import { errors } from '../../kernel/errors.js';
import type { IdentityAuthority } from '../../kernel/identity-guard.js';

let held: IdentityAuthority | null = null;

export function receiveAuthority(authority: IdentityAuthority): void {
  held = authority;
}

export function identityAuthority(): IdentityAuthority {
  if (!held) throw errors.unavailable('identity_unavailable', 'the identity plugin was not given the identity authority by the kernel');
  return held;
}

/** Operations that change identity facts by design (commit messages name them: `<op>: <ids>`). */
export const IDENTITY_OPS = new Set(['bootstrap', 'create_person', 'create_agent', 'import_person', 'grant_admin', 'revoke_admin']);
