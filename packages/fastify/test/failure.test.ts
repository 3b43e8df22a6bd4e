// Failure modes through @floodgate/fastify: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import { runFaultScenarios } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runFaultScenarios(fastifyHarness);
