// The shared runtime-limits suite (issue #45) on koa: limit functions of the request, their ceiling, a bad answer.
import { runRuntimeLimitSuite, runGeneratedRuntimeLimitSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runRuntimeLimitSuite(koaHarness);
runGeneratedRuntimeLimitSuite(koaHarness);
