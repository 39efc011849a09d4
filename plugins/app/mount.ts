/**
 * The app's pages mounted on its host: imported on the first request to an app path
 * (plugins/app/index.ts), so a server start neither parses nor evaluates the pages and the host
 * (docs/performance.md, "Eighteenth session").
 */
import type { KernelServices } from '../../kernel/plugin.js';
import { AppHost } from './host.js';
import { doSignin, doSignout, showOrgs, showSignin, switchOrg } from './pages/auth.js';
import { showAnalytics, showGraph, showProgram, showPrograms, showSearch } from './pages/explore.js';
import { claimNode, editNode, priorityNode, readinessNode, releaseNode, showHistoryEntry, showNode, statusNode } from './pages/node.js';
import { changeComment, postComment, removeComment } from './pages/comments.js';
import { moveCard, showBoard } from './pages/board.js';
import { finishOidc, redeemInvite, showInvite, startOidc } from './pages/signin-links.js';
import { createNode, lookup, showNew } from './pages/create.js';
import { editFields } from './pages/node-edit.js';
import { assignNode, edgeNode, unassignNode } from './pages/node-people.js';
import { mountAdminConsole } from './pages/admin/routes.js';
import { streamEvents } from './pages/events.js';
import { dryRunEditor, saveEditor, showEditor } from './pages/schema-editor.js';
import { approveProposal, dryRunProposal, rejectProposal, showProposal } from './pages/schema-proposal.js';
import { showSchema, showSchemaType } from './pages/schema.js';
import { markRead, showInbox } from './pages/inbox.js';
import { showQueue } from './pages/queue.js';
import { showLensCatalog, showView } from './pages/views.js';
import { SESSION_COOKIE } from './session.js';
import { StaticFiles } from './static-files.js';

export function buildHost(services: KernelServices): AppHost {
  const host = new AppHost(services);
  const files = new StaticFiles();
  host.get('/app/static/:file', async (req) => files.serve(req.params.file!));
  host.get('/app/static/vendor/:file', async (req) => files.serve(`vendor/${req.params.file!}`));
  host.get('/app', async (req, h) => ({ redirect: (await h.sessions.resolve(req.cookie(SESSION_COOKIE))) ? '/app/queue' : '/app/signin' }));
  host.get('/app/signin', showSignin);
  host.post('/app/signin', doSignin);
  host.get('/app/signin/oidc', startOidc);
  host.get('/app/signin/oidc/callback', finishOidc);
  host.get('/app/invite/:org', showInvite);
  host.post('/app/invite/:org', redeemInvite);
  host.postSigned('/app/signout', doSignout);
  host.getSigned('/app/orgs', showOrgs);
  host.postSigned('/app/orgs', switchOrg);
  host.getSigned('/app/queue', showQueue);
  host.getSigned('/app/new', showNew);
  host.postSigned('/app/new', createNode);
  host.getSigned('/app/lookup', lookup);
  host.getSigned('/app/board', showBoard);
  host.postSigned('/app/board/move', moveCard);
  host.getSigned('/app/inbox', showInbox);
  host.getSigned('/app/events', streamEvents);
  host.postSigned('/app/inbox/read', markRead);
  host.getSigned('/app/nodes/:id', showNode);
  host.postSigned('/app/nodes/:id/claim', claimNode);
  host.postSigned('/app/nodes/:id/release', releaseNode);
  host.postSigned('/app/nodes/:id/status', statusNode);
  host.postSigned('/app/nodes/:id/priority', priorityNode);
  host.postSigned('/app/nodes/:id/readiness', readinessNode);
  host.postSigned('/app/nodes/:id/edges', edgeNode);
  host.postSigned('/app/nodes/:id/edit', editNode);
  host.postSigned('/app/nodes/:id/fields', editFields);
  host.postSigned('/app/nodes/:id/assign', assignNode);
  host.postSigned('/app/nodes/:id/unassign', unassignNode);
  host.postSigned('/app/nodes/:id/comments', postComment);
  host.postSigned('/app/comments/:id/edit', changeComment);
  host.postSigned('/app/comments/:id/delete', removeComment);
  host.getSigned('/app/nodes/:id/history/:sha', showHistoryEntry);
  host.getSigned('/app/nodes/:id/graph', showGraph);
  host.getSigned('/app/programs', showPrograms);
  host.getSigned('/app/programs/:id', showProgram);
  host.getSigned('/app/analytics', showAnalytics);
  host.getSigned('/app/search', showSearch);
  host.getSigned('/app/views', showLensCatalog);
  // schema authors (issue 25 item 5); the editor before /app/schema/:type, which would take its name
  host.getSigned('/app/schema', showSchema);
  host.getSigned('/app/schema/editor', showEditor);
  host.postSigned('/app/schema/editor', saveEditor);
  host.postSigned('/app/schema/editor/dry-run', dryRunEditor);
  host.getSigned('/app/schema/proposals/:id', showProposal);
  host.postSigned('/app/schema/proposals/:id/dry-run', dryRunProposal);
  host.postSigned('/app/schema/proposals/:id/approve', approveProposal);
  host.postSigned('/app/schema/proposals/:id/reject', rejectProposal);
  host.getSigned('/app/schema/:type', showSchemaType);
  host.get('/app/views/:id', showView);
  host.get('/views/:id', showView);
  mountAdminConsole(host);
  return host;
}
