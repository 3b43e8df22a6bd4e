// The shared quota suite (calendar windows, plans from resolveKey) through @floodgate/hono on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runQuotaSuite(honoHarness);
