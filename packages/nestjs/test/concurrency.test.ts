// The shared in-flight limit suite (concurrency) through @floodgate/nestjs on Express and Fastify, on a real Redis.
import { runConcurrencySuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runConcurrencySuite(nestHarness(platform));
