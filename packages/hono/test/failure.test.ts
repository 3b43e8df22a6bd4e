// Failure modes through @floodgate/hono: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import { runFaultScenarios } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runFaultScenarios(honoHarness);
