// Koa: the blocked caller's 429 is written straight to Node; upstream middleware still sees ctx.status 429.
import { runDirectResponseSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runDirectResponseSuite(koaHarness);
