// The shared shaping suite (route option shape) through @floodgate/fastify.
import { runShapingSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runShapingSuite(fastifyHarness);
