// ESLint: typescript-eslint's recommended rules over the TypeScript sources, with the few
// exceptions this codebase makes on purpose (each says why). Formatting is Prettier's job
// (.prettierrc.json); `npm run lint` runs both, and .ci/run runs `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'static/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
    rules: {
      // A leading underscore marks a binding kept for its position (a destructured rest, a callback's shape).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Tests, benches and fuzzers read arbitrary JSON bodies back; `any` there is the honest type.
    files: ['test/**', 'bench/**', 'fuzz/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
