import { applyDecorators } from '@nestjs/common';
import { IsString, Matches, MaxLength, ValidationArguments } from 'class-validator';
import { NO_CONTROL_CHARACTERS } from './json-schema';

const ONE_LINE = new RegExp(NO_CONTROL_CHARACTERS);

/** One message for a missing or non-string name, rather than every rule it breaks. */
const named = (required: string, message: string) => ({
  message: ({ value }: ValidationArguments) => (value === undefined || value === null ? required : typeof value !== 'string' ? 'must be a string' : message),
});

/**
 * A name people read in lists (a key's, a member's, an organization's): a string of one line, not
 * blank, at most `maxLength` characters. `what` and `example` make the message when it is missing.
 */
export function IsDisplayName(what: string, maxLength: number, example?: string): PropertyDecorator {
  const required = `is required: ${what}, 1 to ${maxLength} characters${example ? ` (e.g. "${example}")` : ''}`;
  return applyDecorators(
    IsString(named(required, 'must be a string')),
    Matches(/\S/, named(required, 'must not be blank')),
    MaxLength(maxLength, named(required, `must be shorter than or equal to ${maxLength} characters`)),
    Matches(ONE_LINE, named(required, 'must be one line without control characters')),
  );
}
