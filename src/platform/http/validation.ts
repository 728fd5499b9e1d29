import { ValidationError, ValidationPipe } from '@nestjs/common';
import { RequestError, RequestErrorCode } from './domain-error';

export interface FieldError {
  field: string;
  message: string;
}

/** Flattens class-validator's tree into `a.b[2].c`-style paths, one entry per broken rule. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const segment = /^\d+$/.test(error.property) ? `[${error.property}]` : error.property;
    const field = parent ? (segment.startsWith('[') ? `${parent}${segment}` : `${parent}.${segment}`) : segment;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message: rephrase(message, error.property) }));
    return [...own, ...flattenValidationErrors(error.children ?? [], field)];
  });
}

/** class-validator starts messages with the bare property name; we name the full path instead. */
function rephrase(message: string, property: string): string {
  if (message.startsWith(`property ${property} should not exist`)) return 'is not an accepted field';
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}

export function validationError(errors: FieldError[]): RequestError {
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
  return new RequestError(
    RequestErrorCode.ValidationFailed,
    first ? `${first.field}: ${first.message}${more}` : 'The request is invalid.',
    { errors },
  );
}

/**
 * Global validation: unknown properties are rejected (the spec closes its objects), values are
 * transformed into DTO instances, and every problem is listed in `metadata.errors`.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => validationError(flattenValidationErrors(errors)),
  });
}
