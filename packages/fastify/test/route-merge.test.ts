// Route config.rateLimit over the plugin's options through Fastify 5, by core's merge rule (the shared route-merge suite).
import { runRouteMergeSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runRouteMergeSuite(fastifyHarness);
