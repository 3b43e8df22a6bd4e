// The generated attack suite through Nest on Express and on Fastify, on the memory store and a real redis-server (packages/adapter-suites/src/generated-attacks.ts).
import { runGeneratedAttackSuite } from '@floodgate/adapter-suites';
import { nestHarness } from './harness';

runGeneratedAttackSuite([nestHarness('express'), nestHarness('fastify')]);
