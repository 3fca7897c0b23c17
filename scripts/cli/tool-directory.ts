#!/usr/bin/env node
import { catalogCommands } from './catalog';
import { runProgram } from './command-line';
import { keysCommands } from './keys';
import { seedCommand } from './seed';

/** `tool-directory`, the operators' CLI (the package's bin): one command group a module. */
void runProgram(
  {
    name: 'tool-directory',
    summary: "Tool Directory's operator commands",
    description: `Tool Directory's operator commands. Each works against the store of the running system,
chosen by the services' own environment (MONGODB_URI, else DATA_DIR; REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS), and prints its
result as JSON on stdout; warnings and errors go to stderr as JSON lines.`,
    subcommands: [keysCommands, catalogCommands, seedCommand],
  },
  process.argv.slice(2),
);
