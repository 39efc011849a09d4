/**
 * The `identity` plugin: personal tokens, people, agents and their tokens, session
 * binding, capability records and profile-to-host matching (SPEC "Identity and agents"),
 * plus the identity-provider adapter behind org choices and invitations (DESIGN.md §7).
 * Every route is REST only (SPEC names no tool twins for them) except grant_admin,
 * revoke_admin and audit_identity, which are MCP tools too.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { orgChoiceProviders } from '../core/org-choices.js';
import * as api from './api.js';
import { idpOrgChoices } from './idp.js';
import { receiveAuthority } from './authority.js';

export const identityPlugin = definePlugin({
  name: 'identity',
  version: '1.0.0',
  dependsOn: ['core'],
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
    { method: 'POST', path: '/v1/agents/:id/heartbeat', operation: api.heartbeat },

    { method: 'GET', path: '/v1/profiles/:id/hosts', operation: api.matchHosts },
  ],
  // MCP twins of the admin-rights operations and the identity audit
  tools: [
    { operation: api.grantAdmin, annotations: { destructiveHint: false, idempotentHint: true } },
    { operation: api.revokeAdmin, annotations: { destructiveHint: true, idempotentHint: true } },
    { operation: api.auditIdentity, annotations: { readOnlyHint: true } },
  ],
  receiveIdentityAuthority: receiveAuthority,
  init() {
    // One stateless provider for every kernel in the process: it reads the provider URL
    // and the plugin's enablement from each request's own services.
    if (!orgChoiceProviders.includes(idpOrgChoices)) orgChoiceProviders.push(idpOrgChoices);
  },
});
