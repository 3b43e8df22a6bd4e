// Build @floodgate/client with the shared package build (tsup.base.ts at the repository root), plus its undici entry and the page its errors cite.
import { copyFileSync, mkdirSync } from 'node:fs';
import { defineConfig, type Options } from 'tsup';
import { packageBuild } from '../../tsup.base';

// `@floodgate/client/undici` (src/undici.ts) is its own entry: only it names undici's types, so code
// that paces fetch alone type-checks without undici installed. Every FloodgateClientError cites
// node_modules/@floodgate/client/docs/client.md: the build copies the repository's docs/client.md
// there (git-ignored, listed in `files`), so the path an error names exists.
export default defineConfig({
  ...(packageBuild as Options),
  entry: ['src/index.ts', 'src/undici.ts'],
  onSuccess: async () => {
    mkdirSync('docs', { recursive: true });
    copyFileSync('../../docs/client.md', 'docs/client.md');
  },
});
