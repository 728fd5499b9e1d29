import { resolve } from 'node:path';
import { defineConfig } from 'vite';

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
