// The shared quota suite (usage route, reserve then settle) through @floodgate/express 5 on a real Redis.
import { runQuotaSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runQuotaSuite(expressHarness(5));
