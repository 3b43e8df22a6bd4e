// TypeDoc (pnpm docs:api -> docs/api): every published package's documented entries, derived from the manifests (scripts/packages.mjs), so a new package is documented without a line here.
import { publishedPackages } from './scripts/packages.mjs';

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  $schema: 'https://typedoc.org/schema.json',
  entryPoints: publishedPackages().flatMap((p) => p.entries),
  entryPointStrategy: 'resolve',
  plugin: ['typedoc-plugin-markdown'],
  out: 'docs/api',
  tsconfig: 'tsconfig.typedoc.json',
  readme: 'none',
  excludePrivate: true,
  excludeInternal: true,
  githubPages: false,
  hideGenerator: true,
  disableSources: true,
};
