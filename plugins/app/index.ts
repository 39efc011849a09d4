/**
 * The `app` plugin: the web app for people, served by the same server under `/app` (and
 * `/views/:id`, the share-link host of docs/spec.md Lenses rule 4; `SVC_APP_URL` points ticket links
 * here). Server-rendered pages with small progressive enhancement (charts, the graph
 * picture); sessions in an HttpOnly cookie; CSRF tokens on every form; a strict
 * Content-Security-Policy without inline scripts. Mounted through the plugin `middleware`
 * hook: HTML pages are not API routes (no RouteDefs, no tools).
 */
import { definePlugin } from '../../kernel/plugin.js';
import type { AppHost } from './host.js';
import { isAppPath } from './paths.js';
import { appRouter } from './router.js';

export const appPlugin = definePlugin({
  name: 'app',
  description: 'The web app for people under /app: queue, board, nodes, inbox, views and the operator console.',
  version: '1.0.0',
  dependsOn: ['core'],
  // each page asks the bridge whether its plugin is usable for the tenant (404 otherwise)
  optionalDependsOn: [
    'analytics',
    'capture',
    'comments',
    'events',
    'github',
    'history',
    'identity',
    'inbox',
    'leases',
    'lenses',
    'queue',
    'webhooks',
  ],
  init(services) {
    services.requestRouters.push(appRouter(services));
  },
  middlewarePaths: ['/app', '/views/'],
  middleware(services) {
    // the pages load with the first app request (plugins/app/mount.ts); a failed import is tried again
    let host: Promise<AppHost> | null = null;
    return async (ctx, next) => {
      if (!isAppPath(ctx.path)) return next();
      host ??= import('./mount.js').then(
        (m) => m.buildHost(services),
        (err: unknown) => {
          host = null;
          throw err;
        },
      );
      await (await host).handle(ctx);
    };
  },
});
