/**
 * The `identity` plugin: personal tokens, people, agents and their tokens, session
 * binding, capability records and profile-to-host matching (SPEC "Identity and agents"),
 * plus the identity-provider adapter behind org choices and invitations (DESIGN.md §7).
 * Every route is REST only; SPEC names no tool twins for these operations.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import { queryString } from '../../kernel/validate.js';
import { orgChoiceProviders } from '../core/org-choices.js';
import { idpOrgChoices } from './idp.js';
import * as ops from './operations.js';

const flag = (v: string | string[] | undefined) => queryString(v) === '1' || queryString(v) === 'true';
const prefixParam = (r: RouteRequest) => ({ prefix: r.params.prefix });
const idParam = (r: RouteRequest) => ({ id: r.params.id });
const idAndBody = (r: RouteRequest) => ({ id: r.params.id, body: r.body });

export const identityPlugin = definePlugin({
  name: 'identity',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'GET', path: '/v1/me/tokens', operation: ops.listOwnTokens },
    { method: 'POST', path: '/v1/me/tokens', operation: ops.mintOwnToken, status: 201 },
    { method: 'DELETE', path: '/v1/me/tokens/:prefix', operation: ops.revokeOwnToken, input: prefixParam },

    { method: 'GET', path: '/v1/admin/tokens', operation: ops.listTeamTokens },
    { method: 'POST', path: '/v1/admin/tokens', operation: ops.adminMintToken, status: 201 },
    { method: 'DELETE', path: '/v1/admin/tokens/:prefix', operation: ops.adminRevokeToken, input: prefixParam },

    { method: 'GET', path: '/v1/admin/people', operation: ops.listPeople },
    { method: 'POST', path: '/v1/admin/people', operation: ops.createPerson, status: 201 },
    { method: 'DELETE', path: '/v1/admin/people/:id', operation: ops.offboardPerson, input: idParam },

    { method: 'GET', path: '/v1/agents', operation: ops.listAgents, input: (r) => ({ all: flag(r.query.all) }) },
    { method: 'POST', path: '/v1/agents', operation: ops.createAgent, status: 201 },
    { method: 'POST', path: '/v1/admin/agents', operation: ops.adminCreateAgent, status: 201 },
    { method: 'POST', path: '/v1/agents/session', operation: ops.bindSession },
    { method: 'POST', path: '/v1/agents/:id/token', operation: ops.mintAgentToken, input: idAndBody, status: 201 },
    { method: 'GET', path: '/v1/agents/:id/tokens', operation: ops.listAgentTokens, input: idParam },
    { method: 'DELETE', path: '/v1/agents/:id/tokens/:prefix', operation: ops.revokeAgentToken, input: (r) => ({ id: r.params.id, prefix: r.params.prefix }) },
    { method: 'POST', path: '/v1/agents/:id/capabilities', operation: ops.publishCapabilities, input: idAndBody },
    { method: 'GET', path: '/v1/agents/:id/capabilities', operation: ops.readCapabilities, input: idParam },
    { method: 'POST', path: '/v1/agents/:id/heartbeat', operation: ops.heartbeat, input: idParam },

    {
      method: 'GET',
      path: '/v1/profiles/:id/hosts',
      operation: ops.matchHosts,
      input: (r) => ({ id: r.params.id, owner: queryString(r.query.owner), max_age: queryString(r.query.max_age) }),
    },
  ],
  init() {
    // One stateless provider for every kernel in the process: it reads the provider URL
    // and the plugin's enablement from each request's own services.
    if (!orgChoiceProviders.includes(idpOrgChoices)) orgChoiceProviders.push(idpOrgChoices);
  },
});
