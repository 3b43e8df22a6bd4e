// Auth routes through Nest on Express and Fastify, on a real Redis: count by outcome, an account key, reset on success, allowList and skip.
import { runAuthRouteSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runAuthRouteSuite(nestHarness(platform));
