// typescript-eslint's strict type-aware rules over the sources and tests.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".typecheck/", "eslint.config.js"] },
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      // With noUncheckedIndexedAccess, `a[i]!` after a bounds check is the idiom.
      "@typescript-eslint/no-non-null-assertion": "off",
      // It reads `signal.aborted` as always false after an await (a flag set by another task).
      "@typescript-eslint/no-unnecessary-condition": "off",
    },
  },
  {
    files: ["test/**"],
    rules: {
      // node:test's test() returns a promise the runner awaits.
      "@typescript-eslint/no-floating-promises": "off",
      "@typescript-eslint/no-confusing-void-expression": "off",
    },
  },
);
