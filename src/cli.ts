// The `spool` executable (package.json `bin`, dist/cli.js): the server (`spool serve`) and the
// command-line client (docs/CLI.md). The commands live in src/cli/, one module each.
// The libuv pool runs fdatasync, segment I/O and zlib; size it before anything touches it.
process.env.UV_THREADPOOL_SIZE ??= '8';

// `spool serve`: a SIGTERM while the server's modules load is kept and drained once the server is
// up, not left to the signal's default action (src/cli/earlyStop.ts).
if (process.argv[2] === 'serve') (await import('./cli/earlyStop.js')).keepEarlyStops();

// A reader that went away (`spool read t | head`) is not an error: stop quietly, like other tools
// (unless stdout is the command's product: a backup). Other write errors are one line, exit 1.
const { onStdoutError } = await import('./cli/common.js');
process.stdout.on('error', onStdoutError);

const { run } = await import('./cli/program.js');
const outcome = await run(process.argv.slice(2));
if (!outcome.keepAlive) {
  // Exit once stdout is flushed, without waiting for idle keep-alive sockets to time out.
  process.stdout.write('', () => process.exit(outcome.code));
}
