// The shared quota suite (usage route, reserve then settle) through @floodgate/fastify on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runQuotaSuite(fastifyHarness);
