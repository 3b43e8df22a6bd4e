// The generated attacks on a shaped route (option shape) through @floodgate/hono (packages/adapter-suites/src/shape-attacks.ts).
import { runShapeAttackSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runShapeAttackSuite(honoHarness);
