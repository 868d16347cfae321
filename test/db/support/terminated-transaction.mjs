// Run as a child process by driver-patch.test.ts, because the defect it probes is an exception thrown from a
// setImmediate callback inside the driver, which no caller can catch and which ends the process.
// A transaction's statement is in flight when the server terminates its backend; postgres.js then sends its
// own ROLLBACK on the dead connection. The pool must reject the transaction and go on serving queries.
import postgres from 'postgres';

const url = process.argv[2];
const sql = postgres(url, { max: 1, onnotice: () => {} });
const killer = postgres(url, { max: 1, onnotice: () => {} });
process.on('uncaughtException', (error) => {
  process.stdout.write(`uncaught: ${error.message}\n`);
  process.exit(2);
});

let pid = null;
// The outcome is taken at once: the transaction may fail before the killer's own answer arrives, and a
// rejection nobody has taken yet would end the process as an unhandled rejection.
const outcome = sql
  .begin(async (tx) => {
    const [row] = await tx`select pg_backend_pid() as pid`;
    pid = row.pid;
    await tx`select pg_sleep(5)`;
  })
  .then(
    () => 'committed',
    (error) => error.code ?? error.message,
  );
while (pid === null) await new Promise((resolve) => setTimeout(resolve, 10));
await killer`select pg_terminate_backend(${pid})`;
const failure = await outcome;
process.stdout.write(`transaction: ${failure}\n`);
// After the failure the pool is left as it is: with a one-connection pool postgres.js 3.4.9 then rejects the
// next query with the old session's error and leaves later ones unsettled (porsager/postgres#1199); the
// worker bounds every database call with its own timeout and uses pools of several connections.
await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]);
process.exit(0);
