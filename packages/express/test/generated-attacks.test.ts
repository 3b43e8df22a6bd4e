// The generated attack suite through Express 5 and 4, on the memory store and a real redis-server (packages/adapter-suites/src/generated-attacks.ts).
import { runGeneratedAttackSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runGeneratedAttackSuite([expressHarness(5), expressHarness(4)]);
