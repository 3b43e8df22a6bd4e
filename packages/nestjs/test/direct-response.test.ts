// respondDirectly: true (opt-in on Nest, whose default sends the 429 through its exception filters): written straight to Node, earlier headers kept.
import { runDirectResponseSuite } from '@floodgate/adapter-suites';
import { nestHarness, type Platform } from './harness';

// The suite's apps leave respondDirectly unset, expecting the direct write; Nest's harness turns it on for them.
for (const platform of ['express', 'fastify'] as Platform[]) runDirectResponseSuite(nestHarness(platform, { respondDirectly: true }));
