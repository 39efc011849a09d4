/**
 * The app's static files: its own CSS and scripts (plugins/app/static) and two vendored
 * libraries served straight from node_modules (chart.js's UMD build, cytoscape's minified
 * build), so `npm start` needs no extra build step. Read once, kept in memory, cached by
 * browsers for an hour.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '../../kernel/errors.js';
import type { AppResult } from './host.js';

const TYPES: Record<string, string> = { css: 'text/css; charset=utf-8', js: 'text/javascript; charset=utf-8', svg: 'image/svg+xml' };

/** The plugin's static folder, from source (tsx) or from the bundle in dist/. */
function ownDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const dir of [join(here, 'static'), join(here, '..', 'plugins', 'app', 'static')]) if (existsSync(join(dir, 'app.css'))) return dir;
  throw new Error(`app plugin: static folder not found near ${here}`);
}

function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  return {
    'chart.umd.min.js': join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'),
    'cytoscape.min.js': join(dirname(require.resolve('cytoscape')), 'cytoscape.min.js'),
  };
}

export class StaticFiles {
  private readonly cache = new Map<string, Buffer>();
  private readonly own = ownDir();
  private readonly vendor = vendorFiles();

  serve(name: string): AppResult {
    const vendor = name.startsWith('vendor/') ? this.vendor[name.slice(7)] : undefined;
    const own = /^[a-z0-9-]+\.(css|js|svg)$/.test(name) ? join(this.own, name) : undefined;
    const file = vendor ?? own;
    if (!file || !existsSync(file)) throw errors.notFound(`file ${name}`);
    let body = this.cache.get(file);
    if (!body) {
      body = readFileSync(file);
      this.cache.set(file, body);
    }
    return { body, type: TYPES[name.split('.').pop()!] ?? 'application/octet-stream', cache: 'public, max-age=3600' };
  }
}
