import type { components } from '../../contract/generated/openapi';

/**
 * A shape of the API as the OpenAPI document publishes it: the TypeScript type openapi-typescript generates at build
 * time (src/contract/generated/, never committed) from the JSON Schema a route validates with. A request's type is
 * therefore the schema its pipe checks, never a second description of it. Change the schema, then `npm run build`.
 */
export type ApiSchema<Name extends SchemaName> = components['schemas'][Name];

/**
 * The name of a schema the document publishes, which `ref` takes (json-schema.ts): a name no registry has, `ref('Sesion')`,
 * fails to compile. A schema added in the same change is known once `npm run build` has exported the document.
 */
export type SchemaName = Extract<keyof components['schemas'], string>;
