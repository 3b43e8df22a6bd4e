// The generated attack suite through Fastify, on the memory store and a real redis-server (packages/adapter-suites/src/generated-attacks.ts).
import { runGeneratedAttackSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runGeneratedAttackSuite([fastifyHarness]);
