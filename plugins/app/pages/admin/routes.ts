/**
 * The operator console's pages under /app/admin (issue 25 item 4), mounted by the page table
 * (plugins/app/index.ts). Every page and form checks the admin gate first (console.ts).
 */
import type { AppHost } from '../../host.js';
import { showAgents, showAudit } from './agents.js';
import { showGithubLinks, switchGithubLink } from './github.js';
import { requireConsoleAdmin } from './console.js';
import { addPerson, invitePerson, mintToken, personAction, revokeToken, showPeople, showTokens } from './people.js';
import { showPlugins, switchPlugin } from './plugins.js';
import { addWebhook, showWebhook, showWebhooks, webhookAction } from './webhooks.js';

export function mountAdminConsole(host: AppHost): void {
  host.getSigned('/app/admin', async (_req, s) => {
    requireConsoleAdmin(s);
    return { redirect: '/app/admin/plugins' };
  });
  host.getSigned('/app/admin/plugins', showPlugins);
  host.postSigned('/app/admin/plugins/:name', switchPlugin);
  host.getSigned('/app/admin/people', showPeople);
  host.postSigned('/app/admin/people', addPerson);
  host.postSigned('/app/admin/people/:id/grant-admin', personAction('grant'));
  host.postSigned('/app/admin/people/:id/revoke-admin', personAction('revoke'));
  host.postSigned('/app/admin/people/:id/offboard', personAction('offboard'));
  host.postSigned('/app/admin/people/:id/invite', invitePerson);
  host.getSigned('/app/admin/tokens', showTokens);
  host.postSigned('/app/admin/tokens', mintToken);
  host.postSigned('/app/admin/tokens/:prefix/revoke', revokeToken);
  host.getSigned('/app/admin/agents', showAgents);
  host.getSigned('/app/admin/audit', showAudit);
  host.getSigned('/app/admin/webhooks', showWebhooks);
  host.postSigned('/app/admin/webhooks', addWebhook);
  host.getSigned('/app/admin/webhooks/:id', showWebhook);
  host.postSigned('/app/admin/webhooks/:id/enabled', webhookAction('enabled'));
  host.postSigned('/app/admin/webhooks/:id/ping', webhookAction('ping'));
  host.postSigned('/app/admin/webhooks/:id/delete', webhookAction('delete'));
  host.getSigned('/app/admin/github', showGithubLinks);
  host.postSigned('/app/admin/github/:id/enabled', switchGithubLink);
}
