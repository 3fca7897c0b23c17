/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Transpile only: `npm run typecheck` does the type checking, once, for the whole tree.
  transform: {
    '^.+\\.[tj]s$': [
      'ts-jest',
      {
        tsconfig: {
          allowJs: true,
          module: 'commonjs',
          esModuleInterop: true,
          isolatedModules: true,
        },
      },
    ],
  },
  // Some dependencies ship ES modules only; they are compiled to CommonJS for Jest.
  transformIgnorePatterns: ['/node_modules/(?!(cookie|content-disposition|oidc-provider|jose)/)'],
  // Refuses to run on a dist/ older than the sources: the tests start the built services.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  // Suites that start several processes run one at a time (the file says how it knows them).
  setupFilesAfterEnv: ['<rootDir>/test/support/one-multi-process-suite.ts'],
  testTimeout: 30000,
  maxWorkers: 2,
};
