import { parseArgs } from 'node:util';
import { isStorageFull } from '../../services/shared/embedded/storage-space';
import { Errors } from '../../services/shared/errors';
import { REDIS_SETTINGS } from '../../services/shared/redis-config';

/**
 * What every command of `tool-directory` shares: parsing its arguments, `--help`, printing its
 * result, its warnings and its errors, and its exit status. Commands only say what they take
 * and do.
 *
 * stdout carries the result alone, as JSON; stderr carries JSON too, a line each: warnings
 * (`{"warning": …}`, also kept in the result's `warnings`) and the error (`{"error": …}`). A
 * usage error adds the command's usage after its error line.
 */

/**
 * The settings that find the running system's store and announce a change, as the services
 * read them. No secret is needed: whoever can run a command there can read the store already.
 */
export const STORE_SETTINGS = ['MONGODB_URI', 'MONGODB_DB', 'DATA_DIR', ...REDIS_SETTINGS] as const;

/** The exit statuses of every command. 75 is sysexits' EX_TEMPFAIL. */
export const EXIT = { ok: 0, failed: 1, usage: 2, tryAgainLater: 75 } as const;

/** Wrong arguments: exit 2, with the usage. */
export class UsageError extends Error {}

/** A failure with more to tell than its message: `details` join `error` on stderr. */
export class CommandFailed extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
  }
}

export interface Option {
  /** How its value is written in the usage: `<file>`. */
  value: string;
  description: string;
  default?: string;
}

export interface Invocation {
  /** The options given (or defaulted), by name. */
  values: Record<string, string | undefined>;
  /** The arguments, in the order of the command's `arguments`. */
  args: string[];
}

export interface Command {
  name: string;
  /** One line, for the list of the command above it. */
  summary: string;
  /** What follows the name in the usage line: `<file>`, `[--format <format>]`. */
  synopsis?: string;
  /** What it does and prints, and what it reads from the environment. */
  description: string;
  /** Its arguments, all required, by name (`file`). */
  arguments?: string[];
  options?: Record<string, Option>;
  /** What makes this command exit 1, for its help. */
  failures?: string;
  /** Also exits 75 when the storage is full. */
  writes?: boolean;
  /** Its result (printed as JSON), or undefined when it printed its output itself. */
  run?: (invocation: Invocation) => Promise<unknown>;
  subcommands?: Command[];
}

const HELP_OPTION = { type: 'boolean', short: 'h' } as const;
/** What `invoke` returns for `--help`. */
const HELP_ASKED = Symbol('help');

const table = (rows: [string, string][]) => {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
};

/** The first line of a command's help: `Usage: tool-directory keys revoke <key>`. */
function usageLine(command: Command, path: string[]): string {
  const synopsis = command.subcommands ? '<command>' : (command.synopsis ?? '');
  return `Usage: ${[...path, synopsis].join(' ')}`.trimEnd();
}

const commandList = (group: Command) => [
  'Commands:',
  ...table(group.subcommands?.map((c): [string, string] => [c.name, c.summary]) ?? []),
];

/**
 * What a usage error prints after its error line: the usage line, a group's commands, and
 * where the whole help is.
 */
function usage(command: Command, path: string[]): string {
  const list = command.subcommands ? ['', ...commandList(command)] : [];
  const more = `\`${path.join(' ')}${command.subcommands ? ' [<command>]' : ''} --help\` tells more.`;
  return [usageLine(command, path), ...list, '', more].join('\n');
}

/** The whole help of a command (`--help`): what it does, its options and exit statuses. */
function help(command: Command, path: string[]): string {
  const lines = [usageLine(command, path), '', command.description, ''];
  if (command.subcommands) {
    const more = `\`${path.join(' ')} <command> --help\` tells a command's options and exit statuses.`;
    return [...lines, ...commandList(command), '', more].join('\n');
  }
  const options = Object.entries(command.options ?? {}).map(([option, o]): [string, string] => [
    `--${option} ${o.value}`,
    o.default === undefined ? o.description : `${o.description} (default ${o.default})`,
  ]);
  const statuses: [string, string][] = [
    [`${EXIT.ok}`, 'done'],
    [`${EXIT.failed}`, `failed${command.failures ? `: ${command.failures}` : ''}`],
    [`${EXIT.usage}`, 'usage error: an unknown option, a missing or extra argument, a bad value'],
  ];
  if (command.writes) {
    statuses.push([
      `${EXIT.tryAgainLater}`,
      'the storage is full: nothing was stored; try again later',
    ]);
  }
  return [
    ...lines,
    'Options:',
    ...table([...options, ['-h, --help', 'print this help']]),
    '',
    'Exit status:',
    ...table(statuses),
  ].join('\n');
}

/** parseArgs' own errors (an unknown option, a missing value) are usage errors. */
function parse(command: Command, argv: string[]) {
  const options = Object.fromEntries(
    Object.entries(command.options ?? {}).map(([name, o]) => [
      name,
      { type: 'string' as const, ...(o.default !== undefined && { default: o.default }) },
    ]),
  );
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: HELP_OPTION },
      allowPositionals: true,
    });
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError((err as Error).message);
    }
    throw err;
  }
}

/** The command `argv` names, the path to it, and the arguments left for it. */
function reach(program: Command, argv: string[]) {
  let command = program;
  const path = [program.name];
  let rest = argv;
  while (command.subcommands && rest[0] !== undefined && !rest[0].startsWith('-')) {
    const [name, ...after] = rest;
    const next = command.subcommands.find((c) => c.name === name);
    if (!next) return { command, path, rest, unknown: name };
    command = next;
    path.push(next.name);
    rest = after;
  }
  return { command, path, rest, unknown: undefined };
}

/** Runs a command on its arguments: its result, or HELP_ASKED when its help was asked for. */
async function invoke(command: Command, argv: string[]): Promise<unknown> {
  const { values, positionals } = parse(command, argv);
  if (values.help) return HELP_ASKED;
  if (command.subcommands) throw new UsageError('Missing command');
  const expected = command.arguments ?? [];
  const missing = expected[positionals.length];
  if (missing !== undefined) throw new UsageError(`Missing argument <${missing}>`);
  const extra = positionals[expected.length];
  if (extra !== undefined) throw new UsageError(`Unexpected argument '${extra}'`);
  return command.run?.({ values: values as Invocation['values'], args: positionals });
}

const line = (value: unknown) => `${JSON.stringify(value)}\n`;

/**
 * How long a command that is done may take to exit. It closes what it opened before it prints,
 * so it exits at once; this keeps what a library still holds from keeping it longer: ioredis
 * waits 2 s on its connection to a sentinel that refused it, which no option shortens.
 */
const EXIT_WITHIN_MS = 500;

/** Exits once stdout has taken the output, if nothing else has ended the process by then. */
function leaveSoon(): void {
  process.stdout.write('', () => setTimeout(() => process.exit(EXIT.ok), EXIT_WITHIN_MS).unref());
}

/**
 * The whole of a `tool-directory` run: finds the command, runs it, prints its result as JSON
 * on stdout (its help on stdout too) and exits with the status its outcome calls for.
 */
export async function runProgram(program: Command, argv: string[]): Promise<void> {
  const { command, path, rest, unknown } = reach(program, argv);
  try {
    if (unknown !== undefined) throw new UsageError(`Unknown command '${unknown}'`);
    const result = await invoke(command, rest);
    if (result === HELP_ASKED) {
      process.stdout.write(`${help(command, path)}\n`);
    } else if (result !== undefined) {
      for (const warning of (result as { warnings?: string[] }).warnings ?? []) {
        process.stderr.write(line({ warning }));
      }
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    }
    leaveSoon();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${line({ error: err.message })}${usage(command, path)}\n`);
      process.exit(EXIT.usage);
    }
    if (isStorageFull(err)) {
      process.stderr.write(line({ error: new Errors.storageFull().message }));
      process.exit(EXIT.tryAgainLater);
    }
    const details = err instanceof CommandFailed ? err.details : {};
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(line({ error: message, ...details }));
    process.exit(EXIT.failed);
  }
}
