// Failure modes through @floodgate/koa: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import { runFaultScenarios } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runFaultScenarios(koaHarness);
