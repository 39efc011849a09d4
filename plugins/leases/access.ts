/**
 * Who may call each lease operation (kernel/access.ts): every credential that acts for a person
 * (leases need a person node; an agent token claims for its owner with the agent recorded).
 * Taking over another holder's lease (`force`) needs an admin: `actor.isAdmin`, which an agent
 * token of an admin's agent carries too.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

const FORCE = {
  input: { force: true },
  admin: true,
  note: "takes over another holder's lease: the person (an agent token's owner) must be an admin",
} as const;
const HELD = "leases the caller holds (another holder's is 409)";

export const leasesAccess: AccessMap = {
  claim_node: { callers: callers.anyPerson, person: true, scope: 'any claimable work node of the tenant', when: [FORCE] },
  renew_node: { callers: callers.anyPerson, person: true, scope: HELD },
  extend: { callers: callers.anyPerson, person: true, scope: HELD },
  reserve: { callers: callers.anyPerson, person: true, scope: 'any work node of the tenant (a grace-window hold for the caller)' },
  release_node: { callers: callers.anyPerson, person: true, scope: HELD },
  claim_batch: { callers: callers.anyPerson, person: true, scope: 'any claimable work nodes of the tenant' },
  renew_batch: { callers: callers.anyPerson, person: true, scope: HELD },
  release_batch: { callers: callers.anyPerson, person: true, scope: HELD },
  claim: { callers: callers.anyPerson, person: true, scope: 'any claimable work node of the tenant', when: [FORCE] },
  renew: { callers: callers.anyPerson, person: true, scope: HELD },
  release: { callers: callers.anyPerson, person: true, scope: HELD },
};
