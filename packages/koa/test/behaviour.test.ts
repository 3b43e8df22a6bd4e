// The shared behaviour table through @floodgate/koa with @koa/router: app-level and per-route, memory and Redis.
import { runBehaviourTable } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runBehaviourTable(koaHarness);
