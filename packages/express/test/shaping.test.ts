// The shared shaping suite (route option shape) through @floodgate/express 4 and 5.
import { runShapingSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runShapingSuite(expressHarness(4));
runShapingSuite(expressHarness(5));
