/**
 * npm run openapi: writes `openapi.json`, the API's OpenAPI document as its routes produce it (the admin
 * routes included), and `src/client/openapi.d.ts`, the types generated from it that the dashboard and the
 * client call the API with. test/openapi.test.ts fails when either differs from what the routes produce.
 */
import { writeFile } from 'node:fs/promises'
import { registerHooks } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Queue } from 'bullmq'
import { createApi } from '../src/api/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { createStore } from '../src/store/index.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The generated files, relative to the repository root. */
export const OPENAPI_FILES = { document: 'openapi.json', types: 'src/client/openapi.d.ts' } as const

/** Never connected to: building the routes and their document queries nothing. */
const UNREACHABLE_DATABASE = 'postgres://codetrail@127.0.0.1:1/codetrail'
const UNREACHABLE_REDIS = { host: '127.0.0.1', port: 1, lazyConnect: true }

/** The document every route of a fully configured API describes, and the TypeScript types generated from it. */
export async function renderOpenApi(): Promise<{ document: string; types: string }> {
  const store = createStore({ databaseUrl: UNREACHABLE_DATABASE })
  // The queue dashboard is documented only when there is a queue to show; this one is never asked anything.
  const queue = new Queue('ranges', { connection: UNREACHABLE_REDIS })
  queue.on('error', () => {})
  const api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: true,
      adminToken: 'document-only-admin-token-0123456789',
      databaseUrl: UNREACHABLE_DATABASE,
      redisUrl: `redis://${UNREACHABLE_REDIS.host}:${UNREACHABLE_REDIS.port}`,
      redisPrefix: 'codetrail',
    },
    chainId: 8453,
    store,
    logger: silentLogger,
    queues: [queue],
    webhookQueue: { enqueue: () => Promise.reject(new Error('no webhook queue while writing the document')) },
  })
  try {
    const document = api.app.swagger()
    return { document: `${JSON.stringify(document, null, 2)}\n`, types: await generateTypes(document) }
  } finally {
    await api.close()
    await queue.close()
    await store.close()
  }
}

let typescript5Resolution = false

async function generateTypes(document: object): Promise<string> {
  // openapi-typescript prints its output with the TypeScript 5 compiler API, which TypeScript 7 (the
  // compiler of this repository) no longer ships: its import of `typescript` gets the `typescript-5` package.
  if (!typescript5Resolution) {
    registerHooks({
      resolve: (specifier, context, next) =>
        next(
          specifier === 'typescript' && context.parentURL?.includes('/node_modules/openapi-typescript/') ? 'typescript-5' : specifier,
          context,
        ),
    })
    typescript5Resolution = true
  }
  const { default: openapiTS, astToString } = await import('openapi-typescript')
  const types = astToString(await openapiTS(document as Parameters<typeof openapiTS>[0]))
  return `/** Generated from ${OPENAPI_FILES.document} by \`npm run openapi\`: never edit by hand. */\n\n${types}`
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { document, types } = await renderOpenApi()
  await writeFile(join(ROOT, OPENAPI_FILES.document), document)
  await writeFile(join(ROOT, OPENAPI_FILES.types), types)
  process.stdout.write(`wrote ${OPENAPI_FILES.document} and ${OPENAPI_FILES.types}\n`)
}
