/**
 * Every signed-in page of the app with the heading it must show (tests and screenshots walk the
 * same list). `admin`: the page is the operator console's, visited with the tenant admin's session
 * (a member gets its 403 page).
 */
export const PAGES: Array<{ name: string; path: string; heading: RegExp; admin?: boolean }> = [
  { name: 'queue', path: '/app/queue', heading: /My queue/ },
  { name: 'board', path: '/app/board?project=proj-web', heading: /Board: Web relaunch/ },
  { name: 'inbox', path: '/app/inbox', heading: /Inbox/ },
  { name: 'new', path: '/app/new', heading: /New node/ },
  { name: 'create', path: '/app/new?type=task', heading: /New task/ },
  { name: 'node', path: '/app/nodes/task-login', heading: /Fix the login redirect loop/ },
  { name: 'graph', path: '/app/nodes/task-launch/graph?depth=2', heading: /Neighborhood of Launch the new site/ },
  { name: 'programs', path: '/app/programs', heading: /Programs/ },
  { name: 'program', path: '/app/programs/task-launch', heading: /Launch the new site/ },
  { name: 'analytics', path: '/app/analytics', heading: /Analytics/ },
  { name: 'views', path: '/app/views', heading: /Views/ },
  { name: 'view', path: '/app/views/lens-open-work', heading: /Open work/ },
  { name: 'search', path: '/app/search?q=login+redirect', heading: /Search/ },
  { name: 'orgs', path: '/app/orgs', heading: /Tenants/ },
  { name: 'schema', path: '/app/schema', heading: /^Schema$/ },
  { name: 'schema-type', path: '/app/schema/task', heading: /Type: task/ },
  { name: 'schema-proposal', path: '/app/schema/proposals/schema-task-review-gate', heading: /Tasks go through review/ },
  { name: 'schema-editor', path: '/app/schema/editor?id=schema-task-review-gate', heading: /Edit schema-task-review-gate/ },
  { name: 'admin-plugins', path: '/app/admin/plugins', heading: /Plugins/, admin: true },
  { name: 'admin-people', path: '/app/admin/people', heading: /People/, admin: true },
  { name: 'admin-tokens', path: '/app/admin/tokens', heading: /Tokens/, admin: true },
  { name: 'admin-agents', path: '/app/admin/agents', heading: /Agents/, admin: true },
  { name: 'admin-webhooks', path: '/app/admin/webhooks', heading: /Webhooks/, admin: true },
  { name: 'admin-github', path: '/app/admin/github', heading: /GitHub/, admin: true },
  { name: 'admin-audit', path: '/app/admin/audit', heading: /Identity audit/, admin: true },
  { name: 'not-found', path: '/app/nodes/task-nowhere', heading: /Not found/ },
];
