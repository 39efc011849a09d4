/**
 * The plugin host: validated, dependency-ordered plugins and what a tenant may use of
 * them (a plugin disabled for a tenant has no routes and no tools there).
 */
import {
  checkManifests,
  orderPlugins,
  resolveTool,
  type NodeWriteCheck,
  type PluginDef,
  type ResourceDef,
  type ResourceTemplateDef,
  type StatusEffect,
  type Tool,
} from './plugin.js';
import type { Tenant } from './tenant.js';
import { errors } from './errors.js';
import { didYouMean, nearest } from './error-hints.js';
import { isOperationDef, readOperations } from './operation.js';

export class PluginHost {
  readonly plugins: PluginDef[];
  /** each plugin's tools, resolved once (name, description and input schema from their operations) */
  private readonly tools = new Map<PluginDef, Tool[]>();

  constructor(plugins: PluginDef[]) {
    checkManifests(plugins);
    this.plugins = orderPlugins(plugins);
    markReadOperations(this.plugins);
    for (const p of this.plugins)
      this.tools.set(
        p,
        (p.tools ?? []).map((def) => {
          const tool = resolveTool(def);
          const access = p.access?.[tool.name];
          return access ? { ...tool, access } : tool;
        }),
      );
  }

  /** A plugin is usable by a tenant when it and everything it depends on is enabled there. */
  usable(tenant: Tenant, plugin: PluginDef): boolean {
    if (!plugin.alwaysOn && !tenant.enabled(plugin.name)) return false;
    return (plugin.dependsOn ?? []).every((dep) => {
      const p = this.plugins.find((x) => x.name === dep);
      return p !== undefined && this.usable(tenant, p);
    });
  }

  enabledFor(tenant: Tenant): PluginDef[] {
    return this.plugins.filter((p) => this.usable(tenant, p));
  }

  /**
   * The tools of the tenant's enabled plugins, or of the requested toolsets only. A toolset is
   * a plugin with tools (`core`, `leases`, `queue`, ...), as github-mcp-server's toolsets let
   * a client load a subset; null asks for all.
   */
  toolsFor(tenant: Tenant, toolsets: string[] | null = null): Tool[] {
    return this.pluginsFor(tenant, toolsets).flatMap((p) => this.tools.get(p) ?? []);
  }

  /** The toolset names a tenant offers: its enabled plugins that declare tools. */
  toolsetsOf(tenant: Tenant): string[] {
    return this.enabledFor(tenant)
      .filter((p) => (this.tools.get(p) ?? []).length > 0)
      .map((p) => p.name);
  }

  /**
   * Parses a `toolsets` selection (`core,leases`; `all` or empty: everything): the list, or
   * null for all. An unknown name is 400 with the names the tenant offers and the nearest.
   */
  parseToolsets(tenant: Tenant, raw: string | string[] | undefined | null): string[] | null {
    const names = [raw ?? []]
      .flat()
      .flatMap((v) => v.split(','))
      .map((v) => v.trim().toLowerCase())
      .filter(Boolean);
    if (names.length === 0 || names.includes('all')) return null;
    const offered = this.toolsetsOf(tenant);
    const unknown = names.filter((n) => !offered.includes(n));
    if (unknown.length > 0) {
      const hint = didYouMean(nearest(unknown[0]!, offered));
      throw errors.badRequest(`unknown toolset '${unknown[0]}'${hint} (allowed: all, ${offered.join(', ')})`, {
        field: 'toolsets',
        unknown,
        allowed: ['all', ...offered],
      });
    }
    return [...new Set(names)];
  }

  private pluginsFor(tenant: Tenant, toolsets: string[] | null): PluginDef[] {
    const enabled = this.enabledFor(tenant);
    return toolsets ? enabled.filter((p) => toolsets.includes(p.name)) : enabled;
  }

  /** every tool of one plugin, resolved */
  toolsOf(plugin: PluginDef): Tool[] {
    return this.tools.get(plugin) ?? [];
  }

  /** The MCP server `instructions` for a tenant: a heading, then each enabled plugin's lines, in plugin order. */
  instructionsFor(tenant: Tenant, toolsets: string[] | null = null): string {
    const lines = this.pluginsFor(tenant, toolsets).flatMap((p) => p.instructions ?? []);
    return [
      'Work graph: typed work nodes (tasks, issues, decisions, specs, ...) kept in git; every write is a commit with its author.',
      ...lines.map((l) => `- ${l}`),
    ].join('\n');
  }

  resourcesFor(tenant: Tenant): ResourceDef[] {
    return this.enabledFor(tenant).flatMap((p) => p.resources ?? []);
  }

  resourceTemplatesFor(tenant: Tenant): ResourceTemplateDef[] {
    return this.enabledFor(tenant).flatMap((p) => p.resourceTemplates ?? []);
  }

  statusEffectsFor(tenant: Tenant): StatusEffect[] {
    return this.enabledFor(tenant).flatMap((p) => p.statusEffects ?? []);
  }

  nodeWriteChecksFor(tenant: Tenant): NodeWriteCheck[] {
    return this.enabledFor(tenant).flatMap((p) => p.nodeWriteChecks ?? []);
  }
}

/** Marks the operations that only read (kernel/operation.ts `readOperations`): all their routes are GETs, or, without a route, their tool says `readOnlyHint`. */
function markReadOperations(plugins: PluginDef[]): void {
  const methods = new Map<object, Set<string>>();
  const readOnlyTools = new Set<object>();
  for (const p of plugins) {
    for (const r of p.routes ?? []) {
      if (!isOperationDef(r.operation)) continue;
      const set = methods.get(r.operation) ?? new Set<string>();
      set.add(r.method);
      methods.set(r.operation, set);
    }
    for (const t of p.tools ?? []) if (isOperationDef(t.operation) && t.annotations?.readOnlyHint) readOnlyTools.add(t.operation);
  }
  for (const [op, set] of methods) if (set.size === 1 && set.has('GET')) readOperations.add(op);
  for (const op of readOnlyTools) if (!methods.has(op)) readOperations.add(op);
}
