/**
 * Who may call each webhooks operation (kernel/access.ts): admins, with a person's own
 * credential. A subscription sends the tenant's events (admin events too) to another system
 * and holds a signing secret, so agent tokens are refused, an admin's agent included.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

const ALL = "the tenant's webhook subscriptions";

export const webhooksAccess: AccessMap = {
  create_webhook: { callers: callers.humans, admin: true, scope: `${ALL}: a new one (its secret answered once)` },
  list_webhooks: { callers: callers.humans, admin: true, scope: `${ALL}, read-only, never a secret` },
  get_webhook: { callers: callers.humans, admin: true, scope: `${ALL}, read-only, never a secret` },
  update_webhook: { callers: callers.humans, admin: true, scope: ALL },
  delete_webhook: { callers: callers.humans, admin: true, scope: ALL },
  ping_webhook: { callers: callers.humans, admin: true, scope: `${ALL}: a ping request to its URL` },
  list_webhook_deliveries: { callers: callers.humans, admin: true, scope: `${ALL}: their delivery logs, read-only` },
  redeliver_webhook: { callers: callers.humans, admin: true, scope: `${ALL}: one retained event sent again` },
};
