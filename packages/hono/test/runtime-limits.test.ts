// The shared runtime-limits suite (issue #45) on hono: limit functions of the request, their ceiling, a bad answer.
import { runRuntimeLimitSuite, runGeneratedRuntimeLimitSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runRuntimeLimitSuite(honoHarness);
runGeneratedRuntimeLimitSuite(honoHarness);
