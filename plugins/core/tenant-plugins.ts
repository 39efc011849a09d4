/**
 * The tenant's plugins as an admin sees and switches them (issue 25, the operator console):
 * `list_tenant_plugins` (GET /v1/tenant/plugins) and `set_tenant_plugin`
 * (POST /v1/tenant/plugins/{name}). Until these, plugin changes were the operator CLI's only
 * (`workgraph tenant plugins`, docs/operator.md "Tenants and plugins"); a change here is saved
 * where the CLI saves it and applied at once through the tenant manager (kernel/tenants.ts
 * `changePlugins`): a disabled plugin's routes answer 404 and its tools leave the tenant's
 * MCP list, and the `plugin.enabled` / `plugin.disabled` admin events (docs/events.md) name
 * the admin. They live in core, which no tenant can switch off, so an admin can always switch
 * a plugin back on.
 *
 * Rules (docs/decisions.md "Operator console"): disabling a plugin that an enabled plugin
 * depends on is 409 naming the dependents; enabling one enables its missing dependencies with
 * it (the answer lists them); always-on plugins cannot be switched; disabling the web app
 * (`app`) needs `confirm: true`, since it signs every person of the tenant out of it.
 */
import { eventActorOf } from '../../kernel/events/emit.js';
import { didYouMean, nearest } from '../../kernel/error-hints.js';
import { errors } from '../../kernel/errors.js';
import { answer, defineOperation, object, s, type Static } from '../../kernel/operation.js';
import type { OpContext, PluginDef } from '../../kernel/plugin.js';
import { ROOT_ID } from '../../kernel/tenants.js';

/** The plugins whose disabling needs `confirm: true`: the web app ends for everyone of the tenant. */
export const CONFIRM_TO_DISABLE = ['app'] as const;

const PluginEntry = answer(
  {
    name: s.string(),
    version: s.stringOrNull(),
    description: s.stringOrNull(),
    enabled: s.boolean('listed for the tenant (always-on plugins: true)'),
    usable: s.boolean('enabled and every plugin it depends on usable: its routes and tools are served'),
    always_on: s.boolean('on for every tenant; cannot be switched'),
    depends_on: s.array(s.string()),
    optional_depends_on: s.array(s.string()),
    required_by: s.array(s.string('an enabled plugin that depends on this one (disabling this one is refused while it is)')),
    confirm_to_disable: s.boolean('disabling it needs confirm: true'),
  },
  [
    'name',
    'version',
    'description',
    'enabled',
    'usable',
    'always_on',
    'depends_on',
    'optional_depends_on',
    'required_by',
    'confirm_to_disable',
  ],
);

export const TenantPluginList = answer({ org: s.string(), plugins: s.array(PluginEntry), count: s.integer() });

export const SetTenantPluginInput = object(
  {
    name: s.string('plugin name', { pattern: '^[a-z0-9][a-z0-9-]*$', maxLength: 100 }),
    enabled: s.boolean('true: enable it (and its missing dependencies); false: disable it'),
    confirm: s.boolean('needed to disable the web app (app)'),
  },
  ['name', 'enabled'],
);

export const TenantPluginSet = answer({
  org: s.string(),
  plugin: s.string(),
  enabled: s.boolean(),
  changed: s.array(s.string('the plugins this call switched (a dependency enabled with it too); empty: nothing to do')),
  plugins: s.array(PluginEntry),
});

function requireTenantAdmin(ctx: OpContext): void {
  if (ctx.actor.agent) throw errors.forbidden("agent tokens cannot change the tenant's plugins; use a personal token of an admin");
  if (!ctx.actor.isAdmin) throw errors.forbidden(`admin only: the caller needs a stewards edge to ${ROOT_ID}`);
}

function entries(ctx: OpContext): Array<Static<typeof PluginEntry>> {
  const { host } = ctx.services;
  const tenant = ctx.tenant;
  const enabled = (p: PluginDef) => Boolean(p.alwaysOn) || tenant.enabled(p.name);
  return host.plugins.map((p) => ({
    name: p.name,
    version: p.version ?? null,
    description: p.description ?? null,
    enabled: enabled(p),
    usable: host.usable(tenant, p),
    always_on: Boolean(p.alwaysOn) || p.name === 'core',
    depends_on: [...(p.dependsOn ?? [])],
    optional_depends_on: [...(p.optionalDependsOn ?? [])],
    required_by: host.plugins.filter((q) => q !== p && enabled(q) && (q.dependsOn ?? []).includes(p.name)).map((q) => q.name),
    confirm_to_disable: (CONFIRM_TO_DISABLE as readonly string[]).includes(p.name),
  }));
}

export const listTenantPlugins = defineOperation({
  name: 'list_tenant_plugins',
  summary: "The tenant's plugins: enabled, dependencies, dependents (admin)",
  description:
    "Every plugin of the server for this tenant: enabled and usable, what it depends on and which enabled plugins depend on it. Admin's person credential only.",
  input: object({}),
  output: TenantPluginList,
  errors: [403],
  run: async (ctx: OpContext) => {
    requireTenantAdmin(ctx);
    const plugins = entries(ctx);
    return { org: ctx.tenant.org, plugins, count: plugins.length };
  },
});

/** The plugin `name` and every plugin it needs that is not enabled yet (dependencies first). */
function withMissingDependencies(all: PluginDef[], name: string, enabled: Set<string>): string[] {
  const out: string[] = [];
  const visit = (n: string) => {
    const p = all.find((x) => x.name === n);
    if (!p || enabled.has(n) || p.alwaysOn || out.includes(n)) return;
    for (const dep of p.dependsOn ?? []) visit(dep);
    out.push(n);
  };
  visit(name);
  return out;
}

export const setTenantPlugin = defineOperation({
  name: 'set_tenant_plugin',
  summary: 'Enable or disable a plugin for the tenant, live (admin)',
  description:
    "Enable (with its missing dependencies) or disable a plugin for this tenant; applied at once. Disabling one an enabled plugin depends on is 409 naming them; core and always-on plugins cannot be switched (409); disabling app needs confirm: true (409 otherwise). Admin's person credential only.",
  input: SetTenantPluginInput,
  output: TenantPluginSet,
  errors: [403, 409],
  example: { enabled: false },
  run: async (ctx: OpContext, input) => {
    requireTenantAdmin(ctx);
    const all = ctx.services.host.plugins;
    const plugin = all.find((p) => p.name === input.name);
    if (!plugin) {
      const names = all.map((p) => p.name);
      throw errors.notFound(`plugin '${input.name}'${didYouMean(nearest(input.name, names))}`, { plugins: names });
    }
    if (plugin.alwaysOn || plugin.name === 'core')
      throw errors.conflict(`'${plugin.name}' is on for every tenant and cannot be switched`, { plugin: plugin.name });
    let changed: string[] = [];
    await ctx.services.tenants.changePlugins(
      ctx.tenant.org,
      (current) => {
        const enabled = new Set(current);
        if (input.enabled) {
          changed = withMissingDependencies(all, plugin.name, enabled);
          for (const n of changed) enabled.add(n);
        } else {
          if (!enabled.has(plugin.name)) return current;
          const dependents = all.filter((q) => q !== plugin && enabled.has(q.name) && (q.dependsOn ?? []).includes(plugin.name));
          if (dependents.length > 0) {
            const names = dependents.map((q) => q.name);
            throw errors.conflict(
              `'${plugin.name}' is needed by ${names.join(', ')}: disable ${names.length > 1 ? 'those' : 'that'} first`,
              {
                plugin: plugin.name,
                required_by: names,
              },
            );
          }
          if ((CONFIRM_TO_DISABLE as readonly string[]).includes(plugin.name) && input.confirm !== true)
            throw errors.conflict(
              `disabling '${plugin.name}' ends the web app for every person of this tenant: send confirm: true to go ahead`,
              { plugin: plugin.name, confirm_required: true },
            );
          enabled.delete(plugin.name);
          changed = [plugin.name];
        }
        enabled.add('core');
        // the server's plugin order, as the CLI writes it; names this server does not know (a newer build's) are kept
        const known = all.map((p) => p.name);
        return [...known.filter((n) => enabled.has(n)), ...current.filter((n) => !known.includes(n))];
      },
      eventActorOf(ctx.actor, ctx.via),
    );
    return { org: ctx.tenant.org, plugin: plugin.name, enabled: input.enabled, changed, plugins: entries(ctx) };
  },
});
