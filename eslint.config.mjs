// ESLint (flat config) for `pnpm test`: a small set of rules the code keeps, each one a class of bug or a house rule, over the packages' and the bench's sources.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Generated, built or vendored: not written by hand here.
    ignores: ['**/node_modules/**', '**/dist/**', '**/dist-*/**', 'docs/api/**', '**/*.generated.ts', 'examples/*/web/dist/**'],
  },
  {
    files: ['packages/*/src/**/*.ts', 'bench/src/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      // Type-aware: each file is checked with the tsconfig that compiles it (the root one, Nest's, the bench's).
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits, catches or marks with `void` loses its rejection: a store failure swallowed without a log.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a boolean or a void callback is expected (an async `if`, an async listener) is always truthy or unhandled.
      '@typescript-eslint/no-misused-promises': 'error',
      // Types imported as types: erased at build time, so an import never runs a module for a type.
      // (`typeof import('x')` stays allowed: it types what a lazy require() of a measured peer returns.)
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // STYLE.md: named exports only (the Fastify plugin's default export is the one exception, marked where it is).
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Named exports only (STYLE.md).' }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // The HTTP pipeline is named steps a reader holds one at a time (issue 31): no function there grows past 80 lines.
    files: ['packages/core/src/http/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: false, skipComments: false }] },
  },
);
