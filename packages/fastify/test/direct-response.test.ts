// Fastify: the blocked caller's 429 is written straight to Node; onSend hooks are skipped, onResponse still runs.
import { runDirectResponseSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runDirectResponseSuite(fastifyHarness);
