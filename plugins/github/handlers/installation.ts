/**
 * `installation` deliveries (GitHub App links): the App uninstalled (`deleted`) or suspended
 * (`suspend`) disables every link of that installation, with the reason; `unsuspend` enables
 * again the links the suspension disabled (not those an admin disabled, nor an uninstalled one:
 * a new installation has a new id, linked by an admin). Other actions change nothing.
 */
import { linksOfInstallation, type StoredLink } from '../store.js';
import type { GithubHandler } from './index.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const SUSPENDED = 'the GitHub App installation was suspended';
export const UNINSTALLED = 'the GitHub App was uninstalled';

export const installationHandler: GithubHandler = async (ctx, payload) => {
  const p = isRecord(payload) ? payload : {};
  const action = typeof p.action === 'string' ? p.action : '';
  const installation = isRecord(p.installation) && typeof p.installation.id === 'number' ? p.installation.id : null;
  if (installation === null) return;
  const sender = isRecord(p.sender) && typeof p.sender.login === 'string' ? p.sender.login : null;
  const now = new Date(ctx.services.clock.now()).toISOString();
  const change = (link: StoredLink, enabled: boolean, reason: string | null): StoredLink => ({
    ...link,
    enabled,
    disabled_reason: reason,
    updated: now,
    // the change is GitHub's: it is recorded under the link's bot person
    updated_by: link.bot_person,
  });
  const links = linksOfInstallation(ctx.stores, installation);
  let changed: StoredLink[] = [];
  if (action === 'deleted' || action === 'suspend') {
    const reason = action === 'deleted' ? UNINSTALLED : SUSPENDED;
    changed = links.filter((l) => l.enabled || l.disabled_reason !== reason).map((l) => change(l, false, reason));
  } else if (action === 'unsuspend') {
    changed = links.filter((l) => !l.enabled && l.disabled_reason === SUSPENDED).map((l) => change(l, true, null));
  }
  if (changed.length === 0) return;
  await ctx.stores.links.batch(changed.map((l) => ({ key: l.id, value: l })));
  ctx.log.info('github: links changed by an installation event', {
    org: ctx.tenant.org,
    action,
    installation,
    sender,
    links: changed.map((l) => l.id),
  });
};
