import { AgentTool, ToolContext, ToolResult } from './tool';

/** A failure the model should read: its message becomes the content of an `isError` result. */
export class ToolError extends Error {}

/** What a tool's body returns: its content (not an error), or a whole result. */
type Outcome = string | ToolResult;

interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  run(input: Record<string, unknown>, context: ToolContext): Promise<Outcome>;
}

/** A tool whose `run` never throws: bad input and failures become `isError` results. */
export function defineTool(spec: ToolSpec): AgentTool {
  return {
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    async run(input, context) {
      try {
        if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new ToolError(`${spec.name} takes an object of named arguments`);
        const outcome = await spec.run(input, context);
        return typeof outcome === 'string' ? { content: outcome, isError: false } : outcome;
      } catch (error) {
        return { content: errorMessage(error), isError: true };
      }
    },
  };
}

/** A thrown value as a message for the model: a ToolError as it is, a file system error with its code. */
export function errorMessage(error: unknown): string {
  if (error instanceof ToolError) return error.message;
  // Not `instanceof Error`: errors from Node's own modules may come from another realm (as under jest).
  const message = typeof error === 'object' && error !== null && typeof (error as Error).message === 'string' ? (error as Error).message : String(error);
  const code = errorCode(error);
  return code && !message.startsWith(code) ? `${code}: ${message}` : message;
}

/** The code of a file system error (`ENOENT` ...), if it is one. */
export function errorCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** An optional argument: absent when missing or null (models send null for arguments they leave out). */
const given = (input: Record<string, unknown>, key: string): unknown => (input[key] === null ? undefined : input[key]);

export function requiredString(input: Record<string, unknown>, key: string, options: { nonEmpty?: boolean } = {}): string {
  const value = given(input, key);
  if (value === undefined) throw new ToolError(`Missing required argument "${key}" (a string)`);
  if (typeof value !== 'string') throw new ToolError(`Argument "${key}" must be a string, not ${describeType(value)}`);
  if (options.nonEmpty && value === '') throw new ToolError(`Argument "${key}" must not be empty`);
  return value;
}

export function optionalString(input: Record<string, unknown>, key: string): string | undefined {
  const value = given(input, key);
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ToolError(`Argument "${key}" must be a string, not ${describeType(value)}`);
  return value;
}

export function optionalBoolean(input: Record<string, unknown>, key: string): boolean | undefined {
  const value = given(input, key);
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new ToolError(`Argument "${key}" must be a boolean, not ${describeType(value)}`);
  return value;
}

export function optionalNumber(
  input: Record<string, unknown>,
  key: string,
  options: { integer?: boolean; min?: number; exclusiveMin?: number } = {},
): number | undefined {
  const value = given(input, key);
  if (value === undefined) return undefined;
  const kind = options.integer ? 'an integer' : 'a number';
  if (typeof value !== 'number' || !Number.isFinite(value) || (options.integer && !Number.isInteger(value)))
    throw new ToolError(`Argument "${key}" must be ${kind}, not ${describeType(value)}`);
  if (options.min !== undefined && value < options.min) throw new ToolError(`Argument "${key}" must be at least ${options.min}, not ${value}`);
  if (options.exclusiveMin !== undefined && value <= options.exclusiveMin)
    throw new ToolError(`Argument "${key}" must be greater than ${options.exclusiveMin}, not ${value}`);
  return value;
}

function describeType(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** True when the buffer looks binary: it holds a NUL byte in its first 8 KB. */
export const looksBinary = (bytes: Buffer): boolean => bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
export const BINARY_SNIFF_BYTES = 8192;

/** `count` and the noun, singular or plural. */
export const plural = (count: number, noun: string, nouns = `${noun}s`): string => `${count} ${count === 1 ? noun : nouns}`;
