// The shared shaping suite (route option shape) through @floodgate/koa.
import { runShapingSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runShapingSuite(koaHarness);
