import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "bench/results/**", "data/**", "test-output/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        console: "readonly", process: "readonly", setTimeout: "readonly", clearTimeout: "readonly",
        setInterval: "readonly", clearInterval: "readonly", setImmediate: "readonly", Buffer: "readonly",
        URL: "readonly", fetch: "readonly", AbortController: "readonly", AbortSignal: "readonly",
        TextEncoder: "readonly", TextDecoder: "readonly", structuredClone: "readonly",
        document: "readonly", window: "readonly", WebSocket: "readonly", localStorage: "readonly",
        sessionStorage: "readonly", performance: "readonly", queueMicrotask: "readonly",
      },
    },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-constant-condition": ["error", { checkLoops: false }],
    },
  },
);
