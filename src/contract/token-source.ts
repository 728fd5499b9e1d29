import { readFileSync, statSync } from 'node:fs';

/** A token that cannot be had from where it was named: the programs print the message and exit 64 (EX_USAGE). */
export class TokenSourceError extends Error {}

/**
 * A program's token, never from the command line (every user of the machine reads it with ps): from the file when one
 * is named (a file wins over the environment), else from the environment variable's value. An unreadable or empty file
 * is a TokenSourceError. A file others may read only gets a warning: secrets mounted into containers (Docker,
 * Kubernetes) are usually 0444 or 0644 in a machine of one user, and refusing them would push people back to the environment.
 *
 * `what` names the token in the empty file's message ("the computer's agent token").
 */
export function tokenFrom(
  file: string | undefined,
  fromEnv: string | undefined,
  what: string,
  warn: (line: string) => void = (line) => console.error(line),
): string | undefined {
  if (file === undefined || file === '') return fromEnv?.trim() || undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
    if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
      warn(`Warning: the token file ${file} can be read by other users of this machine; chmod 600 it.`);
    }
  } catch (error) {
    throw new TokenSourceError(`The token file ${file} cannot be read: ${(error as Error).message}`);
  }
  const token = text.trim();
  if (!token) throw new TokenSourceError(`The token file ${file} is empty: it must hold ${what}.`);
  return token;
}

/** Whether a command line tries to pass a token itself (`--token`, with or without its value): refused before parsing, with the reason. */
export function hasTokenOption(args: readonly string[]): boolean {
  return args.some((arg) => arg === '--token' || arg.startsWith('--token='));
}
