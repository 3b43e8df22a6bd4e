// Auth routes through Fastify 5 on a real Redis: count by outcome, an account key, reset on success, allowList and skip.
import { runAuthRouteSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runAuthRouteSuite(fastifyHarness);
