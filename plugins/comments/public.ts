/**
 * What other plugins may use of comments besides its operations (`api.ts`): the mention
 * pattern, so the web app links exactly the `@handles` this plugin resolves.
 */
export { mentionPattern } from './mentions.js';
