import { AppModule } from '../../app.module';
import { SchemaRegistry } from './json-schema';

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
