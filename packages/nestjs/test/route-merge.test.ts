// A handler's @RateLimit over its controller's through Nest on Express and Fastify, by core's merge rule (the shared route-merge suite; issue #43's bug).
import { runRouteMergeSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runRouteMergeSuite(nestHarness(platform));
