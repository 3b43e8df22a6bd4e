// The shared behaviour table through @floodgate/hono on @hono/node-server: app-level and per-route, memory and Redis.
import { runBehaviourTable } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runBehaviourTable(honoHarness);
