import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsync } from 'fastify'
import { ApiError } from './errors.js'

/** Where `npm run build` writes the bundle (dist/web): beside the compiled dist/src, or under dist/ when run from source. */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../../dist/web' : '../../web', import.meta.url),
)

/** The client-side routes of the dashboard; each answers the same page, which routes itself. */
export const DASHBOARD_PAGES = ['/', '/live', '/register', '/codes/:code'] as const

/** Everything the page loads comes from this origin; the browser refuses any other host. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

/**
 * The dashboard: its pages at {@link DASHBOARD_PAGES} and the hashed, immutable bundle files under
 * `/assets/`, read from `dir` as `scripts/build-web.ts` lays it out (`index.html`, `assets/`).
 */
export const dashboardRoutes: FastifyPluginAsync<{ dir: string }> = async (app, { dir }) => {
  await app.register(fastifyStatic, { root: join(dir, 'assets'), prefix: '/assets/', index: false, immutable: true, maxAge: '365d' })
  for (const page of DASHBOARD_PAGES)
    app.get(page, { schema: { hide: true } }, async (_request, reply) => {
      if (!existsSync(join(dir, 'index.html')))
        throw new ApiError(503, 'dashboard_not_built', `The dashboard is not built in ${dir}: run npm run build:web.`)
      reply.header('cache-control', 'no-cache').header('content-security-policy', CONTENT_SECURITY_POLICY)
      return reply.sendFile('index.html', dir)
    })
}
