// Identity through Fastify 5: trustProxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { runAttackSuite, runIdentitySuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runIdentitySuite(fastifyHarness);
runAttackSuite(fastifyHarness);
