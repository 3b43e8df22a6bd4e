// The generated attacks on a shaped route (option shape) through @floodgate/fastify (packages/adapter-suites/src/shape-attacks.ts).
import { runShapeAttackSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runShapeAttackSuite(fastifyHarness);
