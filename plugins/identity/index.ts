/**
 * The `identity` plugin: personal tokens, people, agents and their tokens, session
 * binding, capability records and profile-to-host matching (docs/spec.md "Identity and agents"),
 * plus the identity-provider adapter behind org choices and invitations (docs/design.md §7).
 * The agent operations a lead or an agent needs have tool twins (list_agents, create_agent,
 * mint_agent_token, bind_session), and so do grant_admin, revoke_admin and audit_identity;
 * the other admin and personal-token routes are REST only.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { identityAccess } from './access.js';
import { orgChoiceProviders } from '../core/public.js';
import * as api from './api.js';
import { idpOrgChoices } from './idp.js';
import { receiveAuthority } from './authority.js';

export const identityPlugin = definePlugin({
  name: 'identity',
  description: 'People, admin rights, personal and agent tokens, agents and their capabilities.',
  access: identityAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  // offboarding names the render tickets' longest lifetime (lenses' TICKET_MAX_DAYS)
  optionalDependsOn: ['lenses'],
  routes: [
    { method: 'GET', path: '/v1/me/tokens', operation: api.listOwnTokens },
    { method: 'POST', path: '/v1/me/tokens', operation: api.mintOwnToken, status: 201 },
    { method: 'DELETE', path: '/v1/me/tokens/:prefix', operation: api.revokeOwnToken },

    { method: 'GET', path: '/v1/admin/tokens', operation: api.listTeamTokens },
    { method: 'POST', path: '/v1/admin/tokens', operation: api.adminMintToken, status: 201 },
    { method: 'DELETE', path: '/v1/admin/tokens/:prefix', operation: api.adminRevokeToken },

    { method: 'GET', path: '/v1/admin/people', operation: api.listPeople },
    { method: 'POST', path: '/v1/admin/people', operation: api.createPerson, status: 201 },
    { method: 'DELETE', path: '/v1/admin/people/:id', operation: api.offboardPerson },
    { method: 'POST', path: '/v1/admin/people/:id/invite', operation: api.invitePerson, status: 201 },
    { method: 'POST', path: '/v1/admin/people/:id/admin', operation: api.grantAdmin },
    { method: 'DELETE', path: '/v1/admin/people/:id/admin', operation: api.revokeAdmin },
    { method: 'GET', path: '/v1/admin/audit/identity', operation: api.auditIdentity },

    { method: 'GET', path: '/v1/agents', operation: api.listAgents },
    { method: 'POST', path: '/v1/agents', operation: api.createAgent, status: 201 },
    { method: 'POST', path: '/v1/admin/agents', operation: api.adminCreateAgent, status: 201 },
    { method: 'POST', path: '/v1/agents/session', operation: api.bindSession },
    { method: 'POST', path: '/v1/agents/:id/token', operation: api.mintAgentToken, status: 201 },
    { method: 'GET', path: '/v1/agents/:id/tokens', operation: api.listAgentTokens },
    { method: 'DELETE', path: '/v1/agents/:id/tokens/:prefix', operation: api.revokeAgentToken },
    { method: 'POST', path: '/v1/agents/:id/capabilities', operation: api.publishCapabilities },
    { method: 'GET', path: '/v1/agents/:id/capabilities', operation: api.readCapabilities },
    { method: 'POST', path: '/v1/agents/:id/heartbeat', operation: api.agentHeartbeat },

    { method: 'GET', path: '/v1/profiles/:id/hosts', operation: api.matchProfileHosts },
  ],
  instructions: [
    "Agent identities: a lead gives an agent its own token over MCP with create_agent {label} then mint_agent_token {id: the agent id, session} (per-session, at most 7 days; `standing: true` for up to a year). The plaintext token is in that answer once: configure it as the agent's Bearer token. An agent whose token was minted without a session calls bind_session {session} first; list_agents shows yours; me tells who a token acts for.",
  ],
  // The tools an agent or a lead needs without REST (docs/decisions.md, "tools"); the admin
  // and person-token routes stay REST (and CLI) only.
  tools: [
    { description: 'Your agents (all: every agent, admin only).', operation: api.listAgents, annotations: { readOnlyHint: true } },
    {
      description: 'Create an agent you own: label; id agent-<slug> unless given. 409 id taken.',
      operation: api.createAgent,
    },
    {
      description:
        "A token for your agent, shown once. Per-session: session (null: bind later), expires <=7d ('8h', ISO); standing: true: up to a year, label. 403 not yours.",
      operation: api.mintAgentToken,
    },
    {
      description: 'Admin only: make a person an admin (a stewards edge to proj-root; history names the granter).',
      operation: api.grantAdmin,
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    {
      description: 'Admin only: a one-time app sign-in link for a person (24 h, shown once; replaces older links).',
      operation: api.invitePerson,
    },
    {
      description: "Admin only: revoke a person's admin rights. 409 last_admin.",
      operation: api.revokeAdmin,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    {
      description:
        'Admin only: identity changes (admin, agent ownership, people) in history, flagging those made outside identity operations.',
      operation: api.auditIdentity,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Per-session agent token minted without a session: bind it to session once (same again: unchanged; another: 409).',
      operation: api.bindSession,
      annotations: { idempotentHint: true },
    },
  ],
  receiveIdentityAuthority: receiveAuthority,
  init() {
    // One stateless provider for every kernel in the process: it reads the provider URL
    // and the plugin's enablement from each request's own services.
    if (!orgChoiceProviders.includes(idpOrgChoices)) orgChoiceProviders.push(idpOrgChoices);
  },
});
