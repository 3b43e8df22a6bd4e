// The shared behaviour table through @floodgate/fastify (plugin + per-route config), on memory and Redis.
import { runBehaviourTable } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runBehaviourTable(fastifyHarness);
