/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(ts|js)$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  // Some dependencies ship ES modules only; they are compiled to CommonJS for Jest.
  transformIgnorePatterns: ['/node_modules/(?!(cookie|content-disposition)/)'],
  testTimeout: 30000,
  maxWorkers: 2,
};
