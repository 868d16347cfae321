#!/usr/bin/env node
import { CommanderError } from 'commander';
import { buildProgram } from './cli/program.js';

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  // commander has already printed usage errors and help; only its exit code is left to apply.
  if (error instanceof CommanderError) process.exit(error.exitCode);
  throw error;
}
