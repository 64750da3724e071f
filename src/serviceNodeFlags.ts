/**
 * The Node.js options the service is started with: `make run`, the production command in README.md and
 * the bench's service processes (bench/lib/service.ts) all use these, and test/unit/serviceNodeFlags.test.ts
 * checks that the Makefile and the README still say so. They are for memory only; the service behaves the
 * same without them. The figures are in bench/README.md, "Node 24 export memory".
 *
 * `--max-semi-space-size=16` caps V8's young generation at two semi-spaces of 16 MB each. Node.js 20 and
 * 22 choose that cap by themselves on a machine with more than 2 GB of memory. The V8 of Node.js 24
 * allows 64 MB each. During a long export the young generation grows to its cap, and the process keeps
 * those pages, so it holds about 100 MB more than on Node.js 22 and gains no measurable speed from it.
 *
 * `--heap-growing-percent=100` starts the next full collection once the old generation has grown to twice
 * what the last one kept. Without it V8 lets a small, quickly collected heap grow up to four times that. During an
 * export most of the rows the database driver parses end up in the old generation, which then filled from
 * about 35 MB to 105-150 MB between full collections. V8 does not accept this option in NODE_OPTIONS.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--heap-growing-percent=100'];
