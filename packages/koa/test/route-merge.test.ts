// Route options over the app-level limiter's through Koa 3 with @koa/router, by core's merge rule (the shared route-merge suite).
import { runRouteMergeSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runRouteMergeSuite(koaHarness);
