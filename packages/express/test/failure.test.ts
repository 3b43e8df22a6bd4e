// Failure modes through @floodgate/express 5: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import { runFaultScenarios } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runFaultScenarios(expressHarness(5));
