// Route options over the app-level limiter's through Express 5 and 4, by core's merge rule (the shared route-merge suite).
import { runRouteMergeSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

for (const version of [5, 4] as const) runRouteMergeSuite(expressHarness(version));
