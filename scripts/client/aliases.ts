/** The short command names of the daily loop (main.ts gives them their behaviour); they shadow a tool-only command of the same name. */
export const ALIAS_NAMES = ['queue', 'show', 'claim', 'done', 'ask', 'new', 'history'];
