// `node --import ./test/helpers/load-log.mjs ...`: appends the URL of every module the process
// loads to the file named by WG_LOAD_LOG (the bundle test's check of what a start loads).
import { register } from 'node:module';

register('./load-log-hooks.mjs', import.meta.url);
