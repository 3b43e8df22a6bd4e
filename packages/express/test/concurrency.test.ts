// The shared in-flight limit suite (concurrency) through @floodgate/express 5 on a real Redis.
import { runConcurrencySuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runConcurrencySuite(expressHarness(5));
