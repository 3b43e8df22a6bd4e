// Route options over the app-level limiter's through Hono, by core's merge rule (the shared route-merge suite).
import { runRouteMergeSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runRouteMergeSuite(honoHarness);
