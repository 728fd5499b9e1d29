import { SchemaObject, SECRET_KEYWORD } from '../../../platform/http/json-schema';
import { SECRET_POINTERS } from '../domain/settings-secrets';
import { enterpriseControlsSchemas } from './enterprise-controls.schemas';

/** The places the settings' schema marks as secret, as SECRET_POINTERS writes them (`*`: any item or key). */
function markedPlaces(schemas: Record<string, SchemaObject>, schema: SchemaObject, at: string[] = [], seen = new Set<string>()): string[][] {
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    if (seen.has(name)) return [];
    return markedPlaces(schemas, schemas[name], at, new Set([...seen, name]));
  }
  const places: string[][] = schema[SECRET_KEYWORD] === true ? [at] : [];
  for (const [key, member] of Object.entries((schema.properties ?? {}) as Record<string, SchemaObject>))
    places.push(...markedPlaces(schemas, member, [...at, key], seen));
  for (const member of (schema.oneOf ?? []) as SchemaObject[]) places.push(...markedPlaces(schemas, member, at, seen));
  if (typeof schema.items === 'object') places.push(...markedPlaces(schemas, schema.items as SchemaObject, [...at, '*'], seen));
  if (typeof schema.additionalProperties === 'object') places.push(...markedPlaces(schemas, schema.additionalProperties as SchemaObject, [...at, '*'], seen));
  return places;
}

describe('Secret marks in the settings schema', () => {
  it('mark exactly the places the server encrypts and masks (SECRET_POINTERS), which the console reads them from', () => {
    const schemas = enterpriseControlsSchemas.components();
    const marked = markedPlaces(schemas, schemas.EnterpriseSettings).map((place) => place.join('/'));
    expect([...new Set(marked)].sort()).toEqual(SECRET_POINTERS.map((pointer) => pointer.join('/')).sort());
  });
});
