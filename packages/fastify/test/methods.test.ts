// Method rotation through Fastify 5: a route of every supported method (what app.all() registers) is one bucket (the shared method suite).
import { runMethodSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runMethodSuite(fastifyHarness);
