// The generated attack suite through Hono on @hono/node-server, on the memory store and a real redis-server (packages/adapter-suites/src/generated-attacks.ts).
import { runGeneratedAttackSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runGeneratedAttackSuite([honoHarness]);
