/**
 * Issue 10 item 10: docs/operator.md documents every environment variable the code reads
 * (the legacy WORKGRAPH_* spellings included), and the systemd unit it points at exists.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/processes.js';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'bench' && name !== 'node_modules') out.push(...sources(path));
    } else if (/\.(ts|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

describe('docs/operator.md', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'operator.md'), 'utf8');

  it('documents every environment variable the server and CLI read', () => {
    const names = new Set<string>();
    for (const file of ['kernel', 'plugins', 'scripts', 'sandbox'].flatMap((d) => sources(join(ROOT, d)))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)) names.add(m[1]!);
      for (const m of text.matchAll(/\benv\(e, '([A-Z][A-Z0-9_]+)'\)/g)) names.add(`SVC_${m[1]}`);
      for (const m of text.matchAll(/\be\.([A-Z][A-Z0-9_]{2,})\b/g)) if (m[1] !== 'UTC') names.add(m[1]!);
    }
    expect(names.size).to.be.greaterThan(15);
    for (const name of names) {
      const documented = name.startsWith('WORKGRAPH_')
        ? doc.includes('WORKGRAPH_') && doc.includes(name.replace('WORKGRAPH_', 'SVC_'))
        : doc.includes(`\`${name}\``);
      expect(documented, `${name} is read by the code but not documented`).to.equal(true);
    }
  });

  it('documents logs, metrics, SIGTERM, systemd, backup and restore; the unit file exists', () => {
    for (const heading of ['## Logs', '## Metrics', '## Stopping', '### Under systemd', '## Backup and restore'])
      expect(doc).to.include(heading);
    expect(existsSync(join(ROOT, 'docs', 'workgraph.service'))).to.equal(true);
    const unit = readFileSync(join(ROOT, 'docs', 'workgraph.service'), 'utf8');
    // the unit runs what `npm start` runs (package.json), from the checkout
    const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    const command = start.replace(/^exec sh scripts\/with-allocator\.sh node /, '');
    const exec = /^ExecStart=\/bin\/sh scripts\/with-allocator\.sh \/usr\/bin\/node (.*)$/m;
    expect(unit).to.match(exec);
    expect(exec.exec(unit)![1]).to.equal(command);
    expect(unit).to.match(/^KillSignal=SIGTERM$/m);
  });
});
