// The shared runtime-limits suite (issue #45) on express: limit functions of the request, their ceiling, a bad answer.
import { runRuntimeLimitSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runRuntimeLimitSuite(expressHarness(5));
