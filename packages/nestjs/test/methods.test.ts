// Method rotation through Nest on Express and Fastify: an @All() handler is one bucket whatever the method (the shared method suite).
import { runMethodSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runMethodSuite(nestHarness(platform));
