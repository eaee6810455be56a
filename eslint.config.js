// ESLint flat config. The one architectural rule that matters most: a service never imports another
// service; services share only libs/* (contracts, service-kit, testing).
import tseslint from "typescript-eslint";

const serviceNames = ["gateway", "ledger", "payments", "payouts", "refunds", "receipts", "kyc", "webhooks", "risk", "invoicing", "tax", "console"];

/** The test functions of vitest: a committed `.only` on any of them silently skips every other test of its file. */
const testFunctions = ["describe", "suite", "it", "test", "bench"];
const focusMessage = "A committed .only skips every other test of the file; remove it before committing.";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", ".data/**"] },
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
  {
    // Every linted file, in every package and in the root's scripts, tests and benchmarks: no focused tests.
    rules: {
      "no-restricted-properties": ["error", ...testFunctions.map((object) => ({ object, property: "only", message: focusMessage }))],
      "no-restricted-syntax": [
        "error",
        // Chained forms the rule above does not see: describe.concurrent.only, it.skipIf(x).only, test.for(x).only.
        {
          selector: `MemberExpression[property.name="only"][object.type="MemberExpression"][object.object.name=/^(${testFunctions.join("|")})$/]`,
          message: focusMessage,
        },
        {
          selector: `MemberExpression[property.name="only"][object.type="CallExpression"][object.callee.object.name=/^(${testFunctions.join("|")})$/]`,
          message: focusMessage,
        },
        { selector: "CallExpression[callee.name=/^(fdescribe|fit|ftest)$/]", message: focusMessage },
      ],
    },
  },
  {
    // The house's limits: a file a reader can hold in mind, a function that does one named step
    // (docs/architecture.md, "The shape of a service"). Tests may have longer bodies (a describe block is a
    // list, not a step), never longer files.
    rules: {
      "max-lines": ["error", { max: 500, skipBlankLines: false, skipComments: false }],
      "max-lines-per-function": ["error", { max: 70, skipBlankLines: false, skipComments: false, IIFEs: true }],
    },
  },
  {
    files: ["**/*.test.ts"],
    rules: { "max-lines-per-function": "off" },
  },
  {
    // Services and libraries: the isolation rule. (Scripts, e2e tests and benchmarks compose services on
    // purpose: they are the composition root, not a service.)
    files: ["services/**/*.ts", "libs/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: serviceNames.map((s) => `@treasury/${s}`),
              message: "A service may import only libs/* (@treasury/contracts, service-kit, testing); talk to other services over NATS.",
            },
            { group: ["**/services/*/**", "../../*/src/**"], message: "Do not reach into another package's files; import libs by package name." },
          ],
        },
      ],
    },
  },
);
