// The published packages are the manifests that are not private; README, docs/packaging.md and the API reference name every one of them, and none other.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const WORDS = ['zero', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve'];

interface Manifest {
  name: string;
  description?: string;
  private?: boolean;
}
const manifests = readdirSync(join(ROOT, 'packages'))
  .filter((dir) => existsSync(join(ROOT, 'packages', dir, 'package.json')))
  .map((dir) => ({ dir, ...(JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as Manifest) }));
const published = manifests.filter((m) => m.private !== true);
const hidden = manifests.filter((m) => m.private === true);
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

it('there are published packages and private ones (the lists below are not vacuous)', () => {
  expect(published.length).toBeGreaterThanOrEqual(7);
  expect(hidden.map((m) => m.name)).toEqual(expect.arrayContaining(['@floodgate/testing', '@floodgate/adapter-suites']));
});

it.each(published.map((m) => [m.name, m]))("README.md's package table names %s with its package.json description", (name, m) => {
  expect(m.description).toBeTruthy();
  const row = read('README.md').split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
  expect({ name, row }).toEqual({ name, row: `| \`${name}\` | ${m.description} |` });
});

it("README.md's package table names no private package", () => {
  for (const m of hidden) expect(read('README.md')).not.toContain(`| \`${m.name}\` |`);
});

it("docs/packaging.md says how many packages are published and names each, in its first sentence", () => {
  const sentence = /(\w+) packages are published: ([^.]*)\./.exec(read('docs/packaging.md').replace(/\s+/g, ' '));
  expect(sentence).not.toBeNull();
  expect(sentence![1]).toBe(WORDS[published.length]);
  const named = [...sentence![2].matchAll(/`(@floodgate\/[a-z-]+)`/g)].map((n) => n[1]).sort();
  expect(named).toEqual(published.map((m) => m.name).sort());
});

it('the API reference (pnpm docs:api, entries from the manifests) has a section for every published package', () => {
  const index = read('docs/api/README.md');
  for (const m of published) expect({ pkg: m.dir, listed: index.includes(`](${m.dir}/src/README.md)`) || index.includes(`](${m.dir}/src/`) }).toEqual({ pkg: m.dir, listed: true });
});
