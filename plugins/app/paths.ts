/**
 * Which request paths are the app's: a module of its own so the plugin's start-up parts (the
 * middleware's check, cluster routing in router.ts) do not load the pages and the host
 * (plugins/app/mount.ts is imported on the first app request; docs/performance.md).
 */
export function isAppPath(path: string): boolean {
  return path === '/app' || path.startsWith('/app/') || path.startsWith('/views/');
}
