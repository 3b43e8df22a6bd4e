// The shared behaviour table through @floodgate/nestjs: Nest 11 on Express and on Fastify, the guard global and per route, memory and Redis.
import { runBehaviourTable } from '@floodgate/adapter-suites';
import { nestHarness } from './harness';

runBehaviourTable(nestHarness('express'));
runBehaviourTable(nestHarness('fastify'));
