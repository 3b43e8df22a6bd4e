// The shared in-flight limit suite (concurrency) through @floodgate/fastify on a real Redis.
import { runConcurrencySuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runConcurrencySuite(fastifyHarness);
