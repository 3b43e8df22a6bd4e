// Build @floodgate/core with the shared package build (tsup.base.ts at the repository root), plus its internal entry and the error reference it ships.
import { copyFileSync, mkdirSync } from 'node:fs';
import { defineConfig, type Options } from 'tsup';
import { packageBuild } from '../../tsup.base';

// `@floodgate/core/http` (src/http.ts): the adapter author's entry, apart from the app author's.
// `@floodgate/core/internal` (src/internal.ts): the script protocol and the algorithm registry for
// Floodgate's own tools, kept out of the public entry. packageBuild is one options object.
// Every FloodgateError cites node_modules/@floodgate/core/docs/errors.md: the build copies the
// repository's docs/errors.md there (git-ignored, listed in `files`), so the path an error names exists.
export default defineConfig({
  ...(packageBuild as Options),
  entry: ['src/index.ts', 'src/http.ts', 'src/internal.ts'],
  onSuccess: async () => {
    mkdirSync('docs', { recursive: true });
    copyFileSync('../../docs/errors.md', 'docs/errors.md');
  },
});
