import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

const SCHEMA_MODULE = 'virtual:schema/';

/**
 * `import schema from 'virtual:schema/EnterpriseSettings'`: one component schema of the server's OpenAPI document (made
 * at build time into src/api/generated/openapi.json) with every schema it refers to, `{root, schemas}`. A page that
 * draws a form from the API's own schema gets those few kilobytes in its chunk, not the whole document.
 */
function openApiSchemas(): Plugin {
  return {
    name: 'openapi-schemas',
    resolveId: (id) => (id.startsWith(SCHEMA_MODULE) ? `\0${id}` : undefined),
    load(id) {
      if (!id.startsWith(`\0${SCHEMA_MODULE}`)) return undefined;
      const file = resolve(import.meta.dirname, 'src', 'api', 'generated', 'openapi.json');
      this.addWatchFile(file);
      const all = (JSON.parse(readFileSync(file, 'utf8')) as { components: { schemas: Record<string, unknown> } }).components.schemas;
      const root = id.slice(`\0${SCHEMA_MODULE}`.length);
      const schemas: Record<string, unknown> = {};
      const visit = (name: string) => {
        if (name in schemas) return;
        if (!(name in all)) throw new Error(`${SCHEMA_MODULE}${name}: no such schema in the OpenAPI document`);
        schemas[name] = all[name];
        for (const match of JSON.stringify(all[name]).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) visit(match[1]);
      };
      visit(root);
      return `export default ${JSON.stringify({ root, schemas })};`;
    },
  };
}

/**
 * The web console, built into dist/web, which the server serves (src/platform/http/web-console.ts).
 * No dev server in the loop: `npm run build` (bin/agent-platform.js) type-checks against the generated API types,
 * then runs this. JSX needs no plugin: Vite's own transformer makes React's automatic runtime.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  publicDir: resolve(import.meta.dirname, 'public'),
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic' } },
  plugins: [openApiSchemas()],
  build: {
    outDir: resolve(import.meta.dirname, '..', 'dist', 'web'),
    emptyOutDir: true,
    target: 'es2022',
    reportCompressedSize: false,
    // Every chunk is fetched from /assets/ with a hash in its name: cached a year, never stale.
    assetsDir: 'assets',
    // No inline data: URLs for small assets, which the Content-Security-Policy would have to allow.
    assetsInlineLimit: 0,
    rolldownOptions: {
      // React Server Components' "use client" markers mean nothing in a browser-only bundle.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
