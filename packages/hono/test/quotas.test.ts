// The shared quota suite (usage route, reserve then settle) through @floodgate/hono on @hono/node-server and a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runQuotaSuite(honoHarness);
