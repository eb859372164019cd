// Vite builds the UI into ui/dist, which the tray app embeds at compile time (tauri.conf.json
// `frontendDist`) and `taskkeeper serve` serves to browsers.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Relative asset URLs: the same dist works at tauri://localhost/ and under the server's /ui/.
  base: './',
  // Preact through esbuild's automatic JSX runtime; no framework plugin needed.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // One small bundle; the window loads it from disk, so splitting buys nothing.
    assetsInlineLimit: 0,
  },
  server: { strictPort: true, port: 1420 },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
