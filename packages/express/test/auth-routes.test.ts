// Auth routes through Express 4 and 5 on a real Redis: count by outcome, an account key, reset on success, allowList and skip.
import { runAuthRouteSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

for (const version of [4, 5] as const) runAuthRouteSuite(expressHarness(version));
