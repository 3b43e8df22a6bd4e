// The shared shaping suite (route option shape) through @floodgate/nestjs on Express and Fastify.
import { runShapingSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runShapingSuite(nestHarness(platform));
