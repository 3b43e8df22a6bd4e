// The shared quota suite (calendar windows, plans from resolveKey) through @floodgate/fastify on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runQuotaSuite(fastifyHarness);
