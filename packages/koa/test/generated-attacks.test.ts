// The generated attack suite through Koa, on the memory store and a real redis-server (packages/adapter-suites/src/generated-attacks.ts).
import { runGeneratedAttackSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runGeneratedAttackSuite([koaHarness]);
