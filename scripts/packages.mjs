// The published packages, derived from the manifests: every folder of packages/ whose package.json is not `private` (check-packages, typedoc and the docs' tests read this, so a new package needs no line anywhere).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Each published package: its folder under packages/, its manifest, and the source file of each documented entry (`exports` with a `source` condition; './internal' carries no semver promise and is left out). */
export function publishedPackages(root = ROOT) {
  return readdirSync(join(root, 'packages'))
    .sort()
    .map((dir) => ({ dir, file: join(root, 'packages', dir, 'package.json') }))
    .filter(({ file }) => existsSync(file))
    .map(({ dir, file }) => ({ dir, manifest: JSON.parse(readFileSync(file, 'utf8')) }))
    .filter(({ manifest }) => manifest.private !== true)
    .map(({ dir, manifest }) => ({
      dir,
      name: manifest.name,
      description: manifest.description,
      manifest,
      entries: Object.entries(manifest.exports ?? {})
        .filter(([subpath, target]) => subpath !== './internal' && target && typeof target === 'object' && typeof target.source === 'string')
        .map(([, target]) => join('packages', dir, target.source)),
    }));
}
