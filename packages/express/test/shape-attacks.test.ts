// The generated attacks on a shaped route (option shape) through @floodgate/express 5 (packages/adapter-suites/src/shape-attacks.ts).
import { runShapeAttackSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runShapeAttackSuite(expressHarness(5));
