/** The plugins the API description tests run with: every plugin of the composition root. */
export { allPlugins as CONTRACT_PLUGINS } from '../../../scripts/plugins.js';
