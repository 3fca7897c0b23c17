/**
 * Node's flags for the gateway process, wherever it runs: the gateway image's CMD (Dockerfile,
 * held to this list by a test), `npm start` and the test and bench harnesses.
 *
 * A young generation of up to 32 MiB per semi-space (V8's default tops out at 16): the gateway
 * allocates a few kilobytes per request, all short-lived, and collected in smaller semi-spaces it
 * spent about 5 % of its CPU on scavenges. Alternated in 1 s slices on cache misses, two
 * processes of each: 159 and 158 µs per request against 165 and 169 µs with the default. It costs
 * up to 64 MiB of memory under load (docs/performance.md).
 */
export const GATEWAY_NODE_FLAGS = ['--max-semi-space-size=32'];
