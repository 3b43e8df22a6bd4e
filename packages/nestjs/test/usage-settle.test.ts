// The shared usage-route and reserve-then-settle suite through @floodgate/nestjs on Express and Fastify, on a real Redis.
import { runUsageSettleSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runUsageSettleSuite(nestHarness(platform));
