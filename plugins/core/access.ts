/**
 * Who may call each core operation (kernel/access.ts). Reads are open to every credential that
 * acts for a person; writes too, attributed to that person (an agent token's owner, with the
 * agent stamped). Held to the code by test/kernel/authorization-matrix.test.ts.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

const ANY_NODE = "any node of the caller's tenant";
/** `force` writes over another holder's lease (leases: strict): admins only, whatever the tenant's lease mode. */
const FORCE = {
  input: { force: true },
  admin: true,
  note: "writes over another holder's lease: the person (an agent token's owner) must be an admin",
} as const;

export const coreAccess: AccessMap = {
  get_status: { callers: callers.anyPerson, scope: "the tenant's status, read-only" },
  me: { callers: callers.anyPerson, scope: "the caller's own identity, read-only" },
  get_org_choices: { callers: callers.anyPerson, scope: "the orgs the caller's person may choose (identity provider), read-only" },
  schema: { callers: callers.anyPerson, scope: "the tenant's live schema, read-only" },
  dry_run_schema: {
    callers: callers.anyPerson,
    person: true,
    scope: "a schema node or draft run against nodes of the caller's tenant in the sandbox, read-only (the people who may propose schemas)",
  },
  get_node: { callers: callers.anyPerson, scope: `${ANY_NODE}, read-only` },
  put_node: {
    callers: callers.anyPerson,
    person: true,
    scope: `${ANY_NODE} except person nodes (403: people are written through the admin people routes)`,
    when: [FORCE],
  },
  add_edge: {
    callers: callers.anyPerson,
    person: true,
    scope: `${ANY_NODE}; identity edges (stewards to proj-root, owned-by, in either direction) are 403: only the identity operations write them`,
    when: [FORCE],
  },
  remove_edge: { callers: callers.anyPerson, person: true, scope: `${ANY_NODE}; identity edges are 403, as add_edge`, when: [FORCE] },
  patch_node: {
    callers: callers.anyPerson,
    person: true,
    scope: `${ANY_NODE} except person nodes; only the fields, edges and body it names`,
    when: [FORCE],
  },
  add_edges: { callers: callers.anyPerson, person: true, scope: `${ANY_NODE}; each item as add_edge` },
  remove_edges: { callers: callers.anyPerson, person: true, scope: `${ANY_NODE}; each item as remove_edge` },
  set_priorities: { callers: callers.anyPerson, person: true, scope: `${ANY_NODE}; each item as set_priority` },
  set_status: { callers: callers.anyPerson, person: true, scope: `${ANY_NODE}, along its type's transitions`, when: [FORCE] },
  set_priority: { callers: callers.anyPerson, person: true, scope: ANY_NODE, when: [FORCE] },
  set_readiness: { callers: callers.anyPerson, person: true, scope: ANY_NODE, when: [FORCE] },
  link_commit: { callers: callers.anyPerson, person: true, scope: ANY_NODE, when: [FORCE] },
  list_tenant_plugins: { callers: callers.humans, admin: true, scope: "the tenant's plugins with their dependencies, read-only" },
  set_tenant_plugin: {
    callers: callers.humans,
    admin: true,
    scope: "the tenant's plugin list (core and always-on plugins are 409; a plugin enabled ones need is 409)",
  },
  hello_mcp_app: { callers: callers.anyPerson, scope: 'a connectivity probe, read-only' },
};
