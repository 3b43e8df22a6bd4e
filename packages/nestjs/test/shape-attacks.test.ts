// The generated attacks on a shaped route (option shape) through @floodgate/nestjs on Express and Fastify (packages/adapter-suites/src/shape-attacks.ts).
import { runShapeAttackSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runShapeAttackSuite(nestHarness(platform));
