// The shared quota suite (usage route, reserve then settle) through @floodgate/koa on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runQuotaSuite(koaHarness);
