/**
 * `apply_lens_action` (MCP only): a declarative action on an item of a rendered lens. The
 * vocabulary is small and maps one-to-one onto existing operations, so every action keeps
 * their gates (transition hooks, lease holder rules, attribution):
 *
 * | action         | value                         | runs                                   |
 * |----------------|-------------------------------|----------------------------------------|
 * | `set_status`   | a status of the item's type   | core `setStatus` (in-progress claims)  |
 * | `set_priority` | `p1`/`p2`/`p3`, or none/clear | core `setPriority`                     |
 * | `claim`        | none                          | leases `claim` (needs `leases`)        |
 * | `release`      | none                          | leases `release` (needs `leases`)      |
 *
 * The item must be in the lens as it renders now (same params), and a lens may narrow the
 * vocabulary with an `actions` list in its frontmatter. Readiness has no tool twin (docs/spec.md),
 * so it is not an action either.
 */
import { errors } from '../../kernel/errors.js';
import type { OpContext } from '../../kernel/plugin.js';
import { invoke, type Static } from '../../kernel/operation.js';
import { setPriority, setStatus } from '../core/api.js';
import { claimNode, releaseNode } from '../leases/api.js';
import type { ApplyLensActionInput } from './api.js';
import type { ActionName } from './definition.js';
import { lensView } from './operations.js';

function needsLeases(ctx: OpContext, action: ActionName): void {
  const leases = ctx.services.host.plugins.find((p) => p.name === 'leases');
  if (!leases || !ctx.services.host.usable(ctx.tenant, leases)) {
    throw errors.validation(`action '${action}' needs the leases plugin, which is not enabled for this tenant`, [
      { field: 'action', value: action },
    ]);
  }
}

export async function applyLensAction(ctx: OpContext, input: Static<typeof ApplyLensActionInput>) {
  const lensId = input.lens_id;
  const itemId = input.item_id;
  const name = input.action;
  const value = input.value ?? null;
  // The value each action needs (the schema admits a string or null for all of them).
  if (name === 'set_status' && (value === null || value === '')) {
    throw errors.validation('set_status needs a status as value', [{ field: 'value', message: 'required non-empty string' }]);
  }
  if ((name === 'claim' || name === 'release') && value !== null) {
    throw errors.validation(`${name} takes no value`, [{ field: 'value', message: 'omit it' }]);
  }

  const view = lensView(ctx, lensId, input.params ?? {});
  const allowed = view.lens.actions;
  if (!allowed.includes(name)) {
    throw errors.validation(`lens ${lensId} does not allow '${name}'`, [{ field: 'action', allowed }]);
  }
  if (!view.matched.has(itemId)) {
    throw errors.conflict(`${itemId} is not an item of lens ${lensId} as it renders now`, {
      lens_id: lensId,
      item_id: itemId,
      params: view.tree.params,
    });
  }

  let result: unknown;
  switch (name) {
    case 'set_status':
      result = await invoke(setStatus, ctx, { id: itemId, status: value });
      break;
    case 'set_priority':
      result = await invoke(setPriority, ctx, { id: itemId, priority: value });
      break;
    case 'claim':
      needsLeases(ctx, name);
      result = await invoke(claimNode, ctx, { id: itemId });
      break;
    case 'release':
      needsLeases(ctx, name);
      result = await invoke(releaseNode, ctx, { id: itemId });
      break;
  }
  return { lens_id: lensId, item_id: itemId, action: name, value, result };
}
