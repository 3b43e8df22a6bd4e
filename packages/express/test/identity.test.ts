// Identity through Express 5 and 4: trust proxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { runAttackSuite, runIdentitySuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

for (const version of [5, 4] as const) {
  // The flood tests exercise core, not routing: once per adapter keeps this file short.
  runIdentitySuite(expressHarness(version), { floodTests: version === 5 });
  runAttackSuite(expressHarness(version));
}
