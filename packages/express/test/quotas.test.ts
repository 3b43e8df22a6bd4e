// The shared quota suite (calendar windows, plans from resolveKey) through @floodgate/express on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runQuotaSuite(expressHarness(5));
