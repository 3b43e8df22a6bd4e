// The shared shaping suite (route option shape) through @floodgate/hono.
import { runShapingSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runShapingSuite(honoHarness);
