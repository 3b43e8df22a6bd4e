// The generated attacks on a shaped route (option shape) through @floodgate/koa (packages/adapter-suites/src/shape-attacks.ts).
import { runShapeAttackSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runShapeAttackSuite(koaHarness);
