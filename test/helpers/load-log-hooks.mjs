// Module hooks of load-log.mjs (they run on the loader's own thread).
import { appendFileSync } from 'node:fs';

export async function load(url, context, nextLoad) {
  if (process.env.WG_LOAD_LOG && url.startsWith('file:')) appendFileSync(process.env.WG_LOAD_LOG, url + '\n');
  return nextLoad(url, context);
}
