/** A JSON Schema as the server's OpenAPI 3.0 document writes them (the subset the console reads). */
export interface JsonSchema {
  $ref?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  /** A setting the server accepts and stores but does not act on: why. */
  'x-no-effect'?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  format?: string;
  nullable?: boolean;
  default?: unknown;
  /** One of these shapes; with `discriminator`, the member whose value (each shape's one-value enum) says which. */
  oneOf?: JsonSchema[];
  discriminator?: { propertyName: string; mapping?: Record<string, string> };
  /** A secret: the server stores it encrypted and answers it masked (`****` and its last four characters). */
  'x-secret'?: boolean;
}

/** Follows `$ref`s to `#/components/schemas/<Name>` in `schemas`; a description written beside the ref wins. */
export function resolveSchema(schema: JsonSchema, schemas: Record<string, JsonSchema>): JsonSchema {
  let current = schema;
  for (let hops = 0; current.$ref && hops < 20; hops++) {
    const target = schemas[current.$ref.replace('#/components/schemas/', '')];
    if (!target) break;
    current = { ...target, ...(current.description ? { description: current.description } : {}) };
    delete current.$ref;
  }
  return current;
}
