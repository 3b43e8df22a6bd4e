// Every Worker entry bundles with no `node:` import, static or dynamic: core and hono run on workerd without `nodejs_compat` (docs/edge.md).
import { bundleWithMeta, WORKER_ENTRIES } from './bundle';

it.each(WORKER_ENTRIES)('%s: no input of the bundle imports a node: module', async (entry) => {
  const { metafile } = await bundleWithMeta(entry);
  const nodeImports = Object.entries(metafile.inputs).flatMap(([file, input]) =>
    input.imports.filter((i) => i.path.startsWith('node:')).map((i) => `${file.replace(/^.*node_modules\/\.pnpm\//, '')} ${i.kind} ${i.path}`),
  );
  expect(nodeImports).toEqual([]);
  // The bundle holds core's sources (the check is of the real paths, not of an empty bundle).
  expect(Object.keys(metafile.inputs).some((file) => file.includes('packages/core/src/identity/api-key.ts'))).toBe(true);
});
