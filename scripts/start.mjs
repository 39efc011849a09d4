#!/usr/bin/env node
// `npm start`: builds the bundle when a source is newer (scripts/build-if-stale.mjs), then runs it
// in this same process (`serve` and any further arguments come from npm). One node start instead
// of two: a `prestart` script was a second node process before every start (docs/performance.md
// "Start-up, fourth session").
import { pathToFileURL } from 'node:url';
import { buildIfStale } from './build-if-stale.mjs';
import { bundle } from './bundle-state.mjs';

const status = buildIfStale();
if (status !== 0) process.exit(status);
await import(pathToFileURL(bundle).href);
