// ESLint flat config. The one architectural rule that matters most: a service never imports another
// service; services share only libs/* (contracts, service-kit, testing).
import tseslint from "typescript-eslint";

const serviceNames = ["gateway", "ledger", "payments", "payouts", "refunds", "receipts", "kyc", "webhooks"];

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
