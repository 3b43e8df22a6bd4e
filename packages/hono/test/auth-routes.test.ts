// Auth routes through Hono on a real Redis: count by outcome, an account key, reset on success, allowList and skip.
import { runAuthRouteSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runAuthRouteSuite(honoHarness);
