// Method rotation through Express 5 and 4: an app.all() route is one bucket whatever the method (the shared method suite).
import { runMethodSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

for (const version of [5, 4] as const) runMethodSuite(expressHarness(version));
