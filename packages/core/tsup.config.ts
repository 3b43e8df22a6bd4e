// Build @floodgate/core with the shared package build (tsup.base.ts at the repository root), plus its internal entry.
import { defineConfig, type Options } from 'tsup';
import { packageBuild } from '../../tsup.base';

// `@floodgate/core/internal` (src/internal.ts): the script protocol and the algorithm registry for
// Floodgate's own tools, kept out of the public entry. packageBuild is one options object.
export default defineConfig({ ...(packageBuild as Options), entry: ['src/index.ts', 'src/internal.ts'] });
