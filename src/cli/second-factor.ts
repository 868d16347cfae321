/**
 * `user totp enroll|confirm|reset`: a person's second factor from the command line. `enroll` prints the
 * otpauth address, its QR code and the recovery codes once, on stdout only (never to a log); the enrolment
 * waits for its first code (`confirm`, or the person's first login, which asks for one already). `reset`
 * removes it, so that the person logs in with the password alone (or enrols again where it is required).
 */
import type { Command } from 'commander';
import type { ConsoleStore, Person } from '../db/index.js';
import { commandLineActor, PeopleArgumentError } from './people.js';
import { printJson, printLines } from './terminal.js';

type WithStore = (work: (store: ConsoleStore) => Promise<void>) => Promise<void>;

export function registerSecondFactorCommands(user: Command, withStore: WithStore): void {
  const totp = user.command('totp').description("a person's second factor (TOTP) for the web console");
  totp
    .command('enroll')
    .description(
      'set up a second factor: prints the otpauth address, its QR code and the recovery codes once',
    )
    .argument('<name>')
    .option('--json', 'print one JSON document on stdout ({ uri, recoveryCodes }), without the QR code')
    .action((name: string, flags: { json?: boolean }) =>
      withStore(async (store) => {
        const { startEnrolment, terminalQr } = await import('../console/second-factor.js');
        const { uri, key, recoveryCodes } = await startEnrolment(
          store,
          await existing(store, name),
          commandLineActor(),
        );
        if (flags.json) return printJson({ uri, recoveryCodes }, []);
        printLines([`second factor of ${name} set up; it waits for its first code`, ''], []);
        // The library's own drawing of our address: block characters and colour codes, written as they are.
        process.stdout.write(`${await terminalQr(uri)}\n`);
        printLines(
          [
            uri,
            `key (to type into the app by hand): ${key}`,
            '',
            'recovery codes (each logs in once; shown only now):',
            ...recoveryCodes.map((code) => `  ${code}`),
            '',
            `confirm with: treasury-bot user totp confirm ${name} --code CODE (or log in with a code)`,
          ],
          [],
        );
      }),
    );
  totp
    .command('confirm')
    .description('confirm a waiting second factor with a code from the authenticator app')
    .argument('<name>')
    .requiredOption('--code <code>', 'the 6 digits the app shows now')
    .action((name: string, flags: { code: string }) =>
      withStore(async (store) => {
        const { acceptSecondFactor } = await import('../console/second-factor.js');
        const person = await existing(store, name);
        const factor = await store.secondFactor.find(person);
        if (!factor) throw new PeopleArgumentError(`${name} has no second factor: enroll first`);
        if (factor.confirmedAt)
          throw new PeopleArgumentError(`the second factor of ${name} is already active`);
        const accepted = await acceptSecondFactor(store, person, flags.code, new Date(), {
          actor: commandLineActor(),
          codeOnly: true,
        });
        if (!accepted) {
          throw new PeopleArgumentError(
            `--code is not the current code of ${name}'s second factor (or was already used): try the next one`,
          );
        }
        printLines([`second factor of ${name} confirmed`], []);
      }),
    );
  totp
    .command('reset')
    .description("remove a person's second factor and recovery codes (an admin's act, audited)")
    .argument('<name>')
    .action((name: string) =>
      withStore(async (store) => {
        await store.secondFactor.reset(await existing(store, name), commandLineActor());
        printLines([`second factor of ${name} removed`], []);
      }),
    );
}

async function existing(store: ConsoleStore, name: string): Promise<Person> {
  const person = await store.people.findByName(name);
  if (!person) {
    const { PeopleError } = await import('../db/index.js');
    throw new PeopleError('USER_NOT_FOUND', `no console user named "${name}"`);
  }
  const { passwordHash: _, ...shown } = person;
  return shown;
}
