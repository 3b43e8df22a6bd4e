// Method rotation through Hono: an app.all() route is one bucket whatever the method, invented tokens included (the shared method suite).
import { runMethodSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runMethodSuite(honoHarness);
