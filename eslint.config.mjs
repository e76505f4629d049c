// Lint set after immich's server: typed rules that catch lost promises and non-exhaustive switches.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'build/**',
      'vendor/**',
      'node_modules/**',
      'scripts/**/*.mjs',
      '*.mjs',
      'binding.d.ts',
      // Its own package (depends on the packed `llamad`), built and checked by test/e2e/host-app.test.ts.
      'examples/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/require-await': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
      curly: ['error', 'multi-line'],
    },
  },
  {
    // The web UI (docs/ui.md): browser code with its own tsconfig (DOM, Preact JSX), type-checked by `npm run check`.
    files: ['ui/**/*.ts', 'ui/**/*.tsx', 'ui/**/*.mts'],
    languageOptions: { parserOptions: { project: './ui/tsconfig.json', tsconfigRootDir: import.meta.dirname } },
  },
);
