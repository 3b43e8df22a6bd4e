// Failure modes through @floodgate/nestjs on Express and Fastify: fail-open, fail-closed and local routes while Redis is killed, paused and restarted.
import { runFaultScenarios } from '@floodgate/adapter-suites';
import { nestHarness } from './harness';

runFaultScenarios(nestHarness('express'));
runFaultScenarios(nestHarness('fastify'));
