// The shared runtime-limits suite (issue #45) on fastify: limit functions of the request, their ceiling, a bad answer.
import { runRuntimeLimitSuite, runGeneratedRuntimeLimitSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runRuntimeLimitSuite(fastifyHarness);
runGeneratedRuntimeLimitSuite(fastifyHarness);
