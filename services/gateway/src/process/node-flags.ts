/**
 * Node's flags for the gateway process, wherever it runs: the gateway image's CMD (Dockerfile,
 * held to this list by a test), `npm start` and the test and bench harnesses.
 *
 * A young generation of up to 32 MiB per semi-space (V8's default tops out at 16): the gateway
 * allocates a few kilobytes per request, all short-lived, and collected in smaller semi-spaces it
 * spends a share of its CPU on scavenges that the larger ones save
 * (docs/performance.md#current-figures). It costs up to 64 MiB of memory under load.
 */
export const GATEWAY_NODE_FLAGS = ['--max-semi-space-size=32'];
