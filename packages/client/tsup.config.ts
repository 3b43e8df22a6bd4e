// Build @floodgate/client with the shared package build (tsup.base.ts at the repository root), plus its undici entry.
import { defineConfig, type Options } from 'tsup';
import { packageBuild } from '../../tsup.base';

// `@floodgate/client/undici` (src/undici.ts) is its own entry: only it names undici's types, so code
// that paces fetch alone type-checks without undici installed.
export default defineConfig({
  ...(packageBuild as Options),
  entry: ['src/index.ts', 'src/undici.ts'],
});
