// The shared quota suite (calendar windows, plans from resolveKey) through @floodgate/koa on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runQuotaSuite(koaHarness);
