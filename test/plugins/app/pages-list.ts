/** Every signed-in page of the app with the heading it must show (tests and screenshots walk the same list). */
export const PAGES: Array<{ name: string; path: string; heading: RegExp }> = [
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
  { name: 'not-found', path: '/app/nodes/task-nowhere', heading: /Not found/ },
];
