// The one build every published package uses: ESM (.mjs) and CommonJS (.js) with type declarations for both.
import { defineConfig } from 'tsup';

export const packageBuild = defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  outDir: 'dist',
});
