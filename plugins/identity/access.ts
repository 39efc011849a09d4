/**
 * Who may call each identity operation (kernel/access.ts), as operations.ts enforces it:
 * - agent tokens never manage tokens, people or agents (`requireHumanToken`), and never carry
 *   their owner's admin rights here;
 * - new credentials come only from a PAT (`requireDirectCredential`: not from an OAuth access
 *   token or a connector JWT);
 * - admin routes need an admin's person credential (`requireAdmin`);
 * - agent token and capability routes are gated by owning the agent (`requireOwner`,
 *   `requireOwnerOrSelf`), not by admin rights.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

export const identityAccess: AccessMap = {
  list_own_tokens: { callers: callers.humans, person: true, scope: "the caller's own personal access tokens" },
  mint_own_token: { callers: callers.patOnly, person: true, scope: "a new PAT for the caller's own person" },
  revoke_own_token: {
    callers: callers.humans,
    person: true,
    scope: "the caller's own PATs (their OAuth grants in cascade); another's prefix is 404",
  },
  list_team_tokens: { callers: callers.humans, admin: true, scope: 'every live PAT and standing agent token of the tenant' },
  admin_mint_token: { callers: callers.patOnly, admin: true, scope: 'a PAT for any existing person of the tenant' },
  admin_revoke_token: { callers: callers.humans, admin: true, scope: 'any token of the tenant' },
  list_people: { callers: callers.humans, admin: true, scope: 'every person of the tenant with their tokens' },
  grant_admin: {
    callers: callers.humans,
    admin: true,
    scope: 'any person of the tenant: writes their stewards edge to proj-root (the only way to make an admin)',
  },
  revoke_admin: { callers: callers.humans, admin: true, scope: 'any admin of the tenant but the last one (409 last_admin)' },
  audit_identity: { callers: callers.humans, admin: true, scope: "every change to an identity fact in the tenant's history, read-only" },
  create_person: { callers: callers.humans, admin: true, scope: 'a new person node of the tenant (never an admin)' },
  invite_person: {
    callers: callers.patOnly,
    admin: true,
    scope: 'a one-time app sign-in link for any person of the tenant (replaces their older link)',
  },
  offboard_person: { callers: callers.humans, admin: true, scope: 'any other person of the tenant (self-offboarding is 422)' },
  list_agents: {
    callers: callers.anyPerson,
    person: true,
    scope: "the agents the caller's person owns",
    when: [
      { input: { all: true }, callers: callers.humans, admin: true, note: "every agent of the tenant: an admin's person credential only" },
    ],
  },
  create_agent: {
    callers: callers.humans,
    person: true,
    scope: "a new agent owned by the caller's person (an `owner` field is not honoured)",
  },
  admin_create_agent: { callers: callers.humans, admin: true, scope: 'a new agent owned by any person of the tenant' },
  bind_session: { callers: ['agent-session'], scope: 'the presenting per-session token itself (write-once)' },
  mint_agent_token: { callers: callers.patOnly, person: true, owns: 'agent', scope: "tokens of the caller's own agents" },
  list_agent_tokens: { callers: callers.humans, person: true, owns: 'agent', scope: "the tokens of the caller's own agents" },
  revoke_agent_token: { callers: callers.humans, person: true, owns: 'agent', scope: "standing tokens of the caller's own agents" },
  publish_capabilities: {
    callers: callers.anyPerson,
    person: true,
    owns: 'agent-or-self',
    scope: "the capability record of the caller's own agent, or of the agent presenting its token",
  },
  read_capabilities: {
    callers: callers.anyPerson,
    person: true,
    owns: 'agent-or-self-or-admin',
    scope: "the capability record of the caller's own agent, of the agent itself, or (admins) of any agent",
  },
  agent_heartbeat: {
    callers: callers.anyPerson,
    person: true,
    owns: 'agent-or-self',
    scope: "the caller's own agent, or the agent presenting its token",
  },
  match_profile_hosts: {
    callers: callers.anyPerson,
    person: true,
    scope: "hosts of the caller's own agents (an admin's person credential: the whole fleet)",
    when: [
      {
        input: { owner: 'person-someone-else' },
        callers: callers.humans,
        admin: true,
        note: "another person's hosts: an admin's person credential only",
      },
    ],
  },
};
