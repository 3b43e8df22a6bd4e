// The shared in-flight limit suite (concurrency) through @floodgate/koa on a real Redis.
import { runConcurrencySuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runConcurrencySuite(koaHarness);
