// The shared quota suite (calendar windows, plans from resolveKey) through @floodgate/nestjs on Express and Fastify, on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runQuotaSuite(nestHarness(platform));
