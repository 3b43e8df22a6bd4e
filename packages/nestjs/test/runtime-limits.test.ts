// The shared runtime-limits suite (issue #45) on Nest, both platforms: limit functions of the request, their ceiling, a bad answer.
import { runGeneratedRuntimeLimitSuite, runRuntimeLimitSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) {
  runRuntimeLimitSuite(nestHarness(platform));
  runGeneratedRuntimeLimitSuite(nestHarness(platform));
}
