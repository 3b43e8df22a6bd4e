// Identity through Nest on Express and Fastify: trust proxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { runAttackSuite, runIdentitySuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) {
  runIdentitySuite(nestHarness(platform));
  runAttackSuite(nestHarness(platform));
}
