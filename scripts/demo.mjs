// `pnpm demo`: starts the playground (examples/playground) with tsx, passing arguments and signals through.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchTsx } from '../examples/shared/launch.mjs';

const playground = join(dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'playground');
launchTsx({ dir: playground, entry: 'src/main.ts', args: process.argv.slice(2), name: 'demo' });
