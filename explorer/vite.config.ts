/**
 * Builds the explorer into static files (explorer/dist) that the service serves at `/`. JSX is
 * Preact's; in development (`npx vite explorer`) /api, /dev and /explorer-config.json go to a
 * service on localhost:8080.
 */
import { defineConfig } from 'vite';

const SERVICE = 'http://localhost:8080';

export default defineConfig({
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // No inline scripts or styles: the page runs under `script-src 'self'; style-src 'self'`.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    proxy: { '/api': SERVICE, '/dev': SERVICE, '/explorer-config.json': SERVICE },
  },
});
