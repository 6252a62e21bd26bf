import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { OPENAPI_FILES, renderOpenApi } from '../scripts/openapi.js'
import { createApi } from '../src/api/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { ROOT } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL } from '../harness/services.js'

const run = promisify(execFile)
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name)
const cleanups: (() => Promise<unknown>)[] = []

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

/** A client's use of the generated types; each `@ts-expect-error` fails the compile if the types were too loose. */
const CLIENT = `
import type { components, operations, paths } from './api'

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never
type Page = Json<paths['/v1/attributions']['get']['responses'][200]>
type Registration = NonNullable<operations['registerBuilderCode']['requestBody']>['content']['application/json']
type Problem = components['schemas']['Error']

export async function firstAttributed(baseUrl: string, builderCode: string): Promise<string | undefined> {
  const response = await fetch(\`\${baseUrl}/v1/attributions?builderCode=\${builderCode}&limit=1\`)
  if (!response.ok) throw new Error(((await response.json()) as Problem).error.code)
  const page = (await response.json()) as Page
  const cursor: string | null = page.nextCursor
  return cursor === '' ? undefined : page.items[0]?.txHash
}

export const registration: Registration = { walletAddress: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045' }
// @ts-expect-error a page has no "rows"
export const wrongField = (page: Page) => page.rows
// @ts-expect-error blockNumber is a number
export const wrongType: Page['items'][number]['blockNumber'] = '12'
export const dashboardAnswers401: 401 extends keyof operations['getQueueDashboard']['responses'] ? true : false = true
`

describe('the OpenAPI document', () => {
  it('is committed as the routes produce it, with the types generated from it', async () => {
    const { document, types } = await renderOpenApi()
    const stale = 'differs from what the routes produce: run `npm run openapi` and commit the result'
    expect(await readFile(join(ROOT, OPENAPI_FILES.document), 'utf8'), `${OPENAPI_FILES.document} ${stale}`).toBe(document)
    expect(await readFile(join(ROOT, OPENAPI_FILES.types), 'utf8'), `${OPENAPI_FILES.types} ${stale}`).toBe(types)
    const stream = JSON.parse(document).paths['/v1/stream'].get.responses['200'].content
    expect(Object.keys(stream)).toEqual(['text/event-stream'])
  })

  it('passes redocly lint with the recommended rules, and a client on the generated types compiles', async () => {
    const db = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(
      () => db.drop(),
      () => redis.cleanup(),
    )
    const dir = await mkdtemp(join(tmpdir(), 'codetrail-openapi-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))

    for (const admin of [false, true]) {
      const api = await createApi({
        config: {
          port: 0,
          builderApiUrl: undefined,
          adminUi: admin,
          adminToken: admin ? 'admin-token-0123456789abcdef' : undefined,
          databaseUrl: db.url,
          redisUrl: REDIS_URL,
          redisPrefix: redis.prefix,
        },
        chainId: 8453,
        store: db.store,
        logger: silentLogger,
        host: '127.0.0.1',
      })
      cleanups.push(() => api.close())
      const address = await api.listen()
      const document = await (await fetch(`${address}/openapi.json`)).text()
      const file = join(dir, `openapi-${admin ? 'admin' : 'public'}.json`)
      await writeFile(file, document)

      const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
      const lint = await run(bin('redocly'), ['lint', file, '--extends=recommended', '--format=json'], { env, cwd: dir }).catch(
        (error) => error,
      )
      const report = JSON.parse(lint.stdout) as {
        totals: { errors: number; warnings: number }
        problems: { ruleId: string; message: string }[]
      }
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([])
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
      expect(JSON.parse(document).paths['/admin/queues'] !== undefined).toBe(admin)
    }

    const { types } = await renderOpenApi()
    await writeFile(join(dir, 'api.ts'), types)
    await writeFile(join(dir, 'client.ts'), CLIENT)
    const compiled = await run(
      bin('tsc'),
      [
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'esnext',
        '--moduleResolution',
        'bundler',
        '--lib',
        'es2022,dom',
        join(dir, 'client.ts'),
      ],
      { cwd: dir },
    ).catch((error) => error)
    expect(`${compiled.stdout ?? ''}${compiled.stderr ?? ''}`).toBe('')
  })
})
