// The shared in-flight limit suite (concurrency) through @floodgate/hono on @hono/node-server and a real Redis.
import { runConcurrencySuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runConcurrencySuite(honoHarness);
