// Express 5: the blocked caller's 429 is written straight to Node (not through res.send), with headers set by earlier middleware.
import { runDirectResponseSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runDirectResponseSuite(expressHarness(5));
