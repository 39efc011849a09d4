/**
 * The plugin host: validated, dependency-ordered plugins and what a tenant may use of
 * them (a plugin disabled for a tenant has no routes and no tools there).
 */
import { checkManifests, orderPlugins, resolveTool, type NodeWriteCheck, type PluginDef, type ResourceDef, type StatusEffect, type Tool } from './plugin.js';
import type { Tenant } from './tenant.js';

export class PluginHost {
  readonly plugins: PluginDef[];
  /** each plugin's tools, resolved once (name, description and input schema from their operations) */
  private readonly tools = new Map<PluginDef, Tool[]>();

  constructor(plugins: PluginDef[]) {
    checkManifests(plugins);
    this.plugins = orderPlugins(plugins);
    for (const p of this.plugins) this.tools.set(p, (p.tools ?? []).map(resolveTool));
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

  toolsFor(tenant: Tenant): Tool[] {
    return this.enabledFor(tenant).flatMap((p) => this.tools.get(p) ?? []);
  }

  /** every tool of one plugin, resolved */
  toolsOf(plugin: PluginDef): Tool[] {
    return this.tools.get(plugin) ?? [];
  }

  /** The MCP server `instructions` for a tenant: a heading, then each enabled plugin's lines, in plugin order. */
  instructionsFor(tenant: Tenant): string {
    const lines = this.enabledFor(tenant).flatMap((p) => p.instructions ?? []);
    return ['Work graph: typed work nodes (tasks, issues, decisions, specs, ...) kept in git; every write is a commit with its author.', ...lines.map((l) => `- ${l}`)].join('\n');
  }

  resourcesFor(tenant: Tenant): ResourceDef[] {
    return this.enabledFor(tenant).flatMap((p) => p.resources ?? []);
  }

  statusEffectsFor(tenant: Tenant): StatusEffect[] {
    return this.enabledFor(tenant).flatMap((p) => p.statusEffects ?? []);
  }

  nodeWriteChecksFor(tenant: Tenant): NodeWriteCheck[] {
    return this.enabledFor(tenant).flatMap((p) => p.nodeWriteChecks ?? []);
  }
}
