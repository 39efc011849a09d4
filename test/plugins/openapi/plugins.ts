/** The plugins the API description tests run with. */
import type { PluginDef } from '../../../kernel/plugin.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { openapiPlugin } from '../../../plugins/openapi/index.js';

export const CONTRACT_PLUGINS: PluginDef[] = [corePlugin, openapiPlugin];
