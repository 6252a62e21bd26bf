/** Stylesheets imported for their effect: esbuild bundles them into the page's CSS file. */
declare module '*.css'
