import { AppModule } from '../../app.module';
import { SchemaObject, SchemaRegistry } from './json-schema';

/**
 * Validators compile on first use, not at start (compiling them all cost ~0.35 s of a 2.3 s start), so a broken schema
 * would first show on a request: this compiles every schema a route of the application checks requests against.
 */
describe('every schema registry the application loads', () => {
  it('compiles each schema its routes check requests against', () => {
    expect(AppModule).toBeDefined();
    const piped = SchemaRegistry.all.flatMap((registry) => [...registry.piped].map((name) => ({ registry, name })));
    expect(SchemaRegistry.all.length).toBeGreaterThanOrEqual(6);
    expect(piped.length).toBeGreaterThanOrEqual(40);
    for (const { registry, name } of piped) expect(() => registry.validator(name)).not.toThrow();
  });
});

/**
 * What the full validation of a refused body costs is bounded by the schema's counts (countProblems refuses a body over
 * them before it runs): so every list a client sends has a maxItems, and every map a maxProperties.
 */
describe('the schemas requests are checked against', () => {
  it('bound every array and every map they accept', () => {
    const unbounded: string[] = [];
    const seen = new Set<string>();
    const walk = (registry: SchemaRegistry, schema: SchemaObject | undefined, path: string): void => {
      if (!schema || typeof schema !== 'object') return;
      if (typeof schema.$ref === 'string') {
        const name = schema.$ref.split('/').pop()!;
        if (!seen.has(name)) {
          seen.add(name);
          walk(registry, registry.components()[name], name);
        }
      }
      for (const keyword of ['allOf', 'oneOf', 'anyOf'])
        ((schema[keyword] as SchemaObject[] | undefined) ?? []).forEach((branch) => walk(registry, branch, path));
      if (schema.items) {
        if (schema.maxItems === undefined) unbounded.push(`${path}: an array without maxItems`);
        walk(registry, schema.items as SchemaObject, `${path}[]`);
      }
      const additional = schema.additionalProperties;
      if (additional && typeof additional === 'object') {
        if (schema.maxProperties === undefined) unbounded.push(`${path}: a map without maxProperties`);
        walk(registry, additional as SchemaObject, `${path}{}`);
      }
      for (const [key, property] of Object.entries((schema.properties ?? {}) as Record<string, SchemaObject>)) walk(registry, property, `${path}.${key}`);
    };
    expect(AppModule).toBeDefined();
    for (const registry of SchemaRegistry.all) {
      for (const name of [...registry.piped, ...(registry.components().EnterpriseSettings ? ['EnterpriseSettings'] : [])]) walk(registry, { $ref: name }, name);
    }
    expect(seen.size).toBeGreaterThan(40);
    expect(unbounded).toEqual([]);
  });
});
