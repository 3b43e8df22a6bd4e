// The one build every published package uses: ESM (.mjs) and CommonJS (.js) with type declarations for both.
import { defineConfig } from 'tsup';

export const packageBuild = defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  // Declarations resolve @floodgate/core to its built .d.ts (as a user's install does), not its sources
  // through the workspace's 'source' condition: each adapter's pass then checks its own files only.
  dts: { compilerOptions: { customConditions: [] } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  outDir: 'dist',
});
