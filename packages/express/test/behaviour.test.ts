// The shared behaviour table through @floodgate/express: Express 4 and 5, app-level and per-route, memory and Redis.
import { runBehaviourTable } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runBehaviourTable(expressHarness(4));
runBehaviourTable(expressHarness(5));
