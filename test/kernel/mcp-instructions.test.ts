/**
 * The MCP server's `instructions` tell an agent the workflow in a few lines: a summary is
 * mandatory, echo the revision, pick up work from the queue, claim it, finish it. Each enabled
 * plugin adds its lines; a disabled plugin's lines are absent (local and proxy stdio modes give
 * the same text: test/kernel/mcp-stdio.test.ts).
 */
import { expect } from 'chai';
import { corePlugin } from '../../plugins/core/index.js';
import { leasesPlugin } from '../../plugins/leases/index.js';
import { allPlugins } from '../../scripts/plugins.js';
import { startTestServer } from '../helpers/harness.js';

describe('MCP instructions', () => {
  it('say how to pick up, claim and finish work, with the summary and revision rules, over Streamable HTTP', async () => {
    const t = await startTestServer({ plugins: allPlugins });
    try {
      const text = (await t.mcp()).getInstructions()!;
      expect(text.split('\n').length).to.be.within(4, 16);
      for (const needle of ['summary', 'revision', 'show_queue', 'claim', 'set_status', 'done', '409'])
        expect(text, needle).to.include(needle);
      const tools = (await (await t.mcp()).listTools()).tools;
      const put = tools.find((x) => x.name === 'put_node')!;
      expect(put.description).to.include('summary').and.include('revision');
    } finally {
      await t.close();
    }
  });

  it('list only the lines of the plugins the tenant has', async () => {
    const t = await startTestServer({ plugins: [corePlugin, leasesPlugin] });
    try {
      const text = (await t.mcp()).getInstructions()!;
      expect(text).to.include('claim').and.include('revision');
      expect(text).to.not.include('show_queue');
    } finally {
      await t.close();
    }
  });
});
