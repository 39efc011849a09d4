/**
 * The plugin host: validated, dependency-ordered plugins and what a tenant may use of
 * them (a plugin disabled for a tenant has no routes and no tools there).
 */
import { checkManifests, orderPlugins, type PluginDef, type ResourceDef, type StatusEffect, type ToolDef } from './plugin.js';
import type { Tenant } from './tenant.js';

export class PluginHost {
  readonly plugins: PluginDef[];

  constructor(plugins: PluginDef[]) {
    checkManifests(plugins);
    this.plugins = orderPlugins(plugins);
  }

  /** A plugin is usable by a tenant when it and everything it depends on is enabled there. */
  usable(tenant: Tenant, plugin: PluginDef): boolean {
    if (!tenant.enabled(plugin.name)) return false;
    return (plugin.dependsOn ?? []).every((dep) => {
      const p = this.plugins.find((x) => x.name === dep);
      return p !== undefined && this.usable(tenant, p);
    });
  }

  enabledFor(tenant: Tenant): PluginDef[] {
    return this.plugins.filter((p) => this.usable(tenant, p));
  }

  toolsFor(tenant: Tenant): ToolDef[] {
    return this.enabledFor(tenant).flatMap((p) => p.tools ?? []);
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
}
