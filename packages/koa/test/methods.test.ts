// Method rotation through Koa 3 with @koa/router: a router.all() route is one bucket whatever the method (the shared method suite).
import { runMethodSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runMethodSuite(koaHarness);
