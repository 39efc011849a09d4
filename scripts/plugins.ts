/**
 * The composition root's plugin list: the one place that names every plugin. Tests
 * build kernels with exactly the plugins they need the same way.
 */
import type { PluginDef } from '../kernel/plugin.js';
import { analyticsPlugin } from '../plugins/analytics/index.js';
import { appPlugin } from '../plugins/app/index.js';
import { capturePlugin } from '../plugins/capture/index.js';
import { commentsPlugin } from '../plugins/comments/index.js';
import { corePlugin } from '../plugins/core/index.js';
import { eventsPlugin } from '../plugins/events/index.js';
import { exportPlugin } from '../plugins/export/index.js';
import { gardenerPlugin } from '../plugins/gardener/index.js';
import { githubPlugin } from '../plugins/github/index.js';
import { historyPlugin } from '../plugins/history/index.js';
import { identityPlugin } from '../plugins/identity/index.js';
import { importPlugin } from '../plugins/import/index.js';
import { inboxPlugin } from '../plugins/inbox/index.js';
import { leasesPlugin } from '../plugins/leases/index.js';
import { oauthPlugin } from '../plugins/oauth/index.js';
import { openapiPlugin } from '../plugins/openapi/index.js';
import { lensesPlugin } from '../plugins/lenses/index.js';
import { queuePlugin } from '../plugins/queue/index.js';
import { questionsPlugin } from '../plugins/questions/index.js';
import { webhooksPlugin } from '../plugins/webhooks/index.js';
import { workflowsPlugin } from '../plugins/workflows/index.js';

export const allPlugins: PluginDef[] = [
  corePlugin,
  identityPlugin,
  leasesPlugin,
  queuePlugin,
  historyPlugin,
  exportPlugin,
  questionsPlugin,
  commentsPlugin,
  gardenerPlugin,
  workflowsPlugin,
  lensesPlugin,
  capturePlugin,
  analyticsPlugin,
  importPlugin,
  oauthPlugin,
  openapiPlugin,
  eventsPlugin,
  inboxPlugin,
  appPlugin,
  webhooksPlugin,
  githubPlugin,
];
