/**
 * docker-compose.yml safe to run on a public host: only the API published on every interface, passwords
 * required from .env (no defaults), PostgreSQL with scram-sha-256, Redis with requirepass, Grafana without
 * anonymous access and reading through the read-only analytics_reader role; and PostgreSQL's settings
 * ones PostgreSQL accepts. No Docker engine here: the file is parsed and its variables interpolated the
 * way `docker compose config` does, and the settings read by this machine's `postgres`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { ADMIN_DATABASE_URL } from '../harness/services.js'
import { asPostgres, ownByPostgres, postgresBinDir } from './helpers/postgresTools.js'

const root = new URL('../', import.meta.url)
const composeText = readFileSync(new URL('docker-compose.yml', root), 'utf8')
const compose = parse(composeText, { merge: true }) as { services: Record<string, Service> }
type Service = {
  ports?: string[]
  environment?: Record<string, string>
  command?: string[]
  volumes?: string[]
  profiles?: string[]
  shm_size?: string
}

const PASSWORDS = ['POSTGRES_PASSWORD', 'REDIS_PASSWORD', 'ANALYTICS_READER_PASSWORD', 'GRAFANA_ADMIN_PASSWORD']

/** Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?message}`: a missing required variable throws its message. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}/g, (_, name: string, op: string | undefined, arg: string | undefined) => {
    const value = env[name]
    if (value !== undefined && value !== '') return value
    if (op === ':?') throw new Error(`required variable ${name} is missing a value: ${arg}`)
    return op === ':-' ? arg! : ''
  })
}

const FILLED = Object.fromEntries(PASSWORDS.map((name) => [name, `${name.toLowerCase()}-value`]))
const render = (env: Record<string, string>) =>
  parse(interpolate(composeText, env), { merge: true }) as { services: Record<string, Service> }
const rendered = render(FILLED)

describe('docker-compose.yml', () => {
  it('publishes only the API (and the demo API) on every interface; the rest on 127.0.0.1 or not at all', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) {
        if (name === 'api' || name === 'demo') expect(port, name).toBe('8080:8080')
        else expect(port, `${name} publishes ${port}`).toMatch(/^127\.0\.0\.1:\d+:\d+$/)
      }
    }
    expect(compose.services.prometheus!.ports).toBeUndefined()
    expect(compose.services.postgres!.ports).toEqual(['127.0.0.1:5432:5432'])
    expect(compose.services.redis!.ports).toEqual(['127.0.0.1:6379:6379'])
  })

  it('refuses to render without each password, naming it and .env.example', () => {
    for (const missing of PASSWORDS) {
      const env = { ...FILLED, [missing]: '' }
      expect(() => interpolate(composeText, env)).toThrow(new RegExp(`${missing} .*set ${missing} in \\.env \\(see \\.env\\.example\\)`))
    }
    // Every use of a password is a required one: none falls back to a default.
    for (const name of PASSWORDS) {
      const uses = composeText.match(new RegExp(`\\$\\{${name}[^}]*\\}`, 'g')) ?? []
      expect(uses.length, name).toBeGreaterThan(0)
      for (const use of uses) expect(use).toMatch(new RegExp(`^\\$\\{${name}:\\?`))
    }
  })

  it('runs PostgreSQL with a password and scram-sha-256, never trust', () => {
    const postgres = rendered.services.postgres!.environment!
    expect(postgres.POSTGRES_PASSWORD).toBe(FILLED.POSTGRES_PASSWORD)
    expect(postgres.POSTGRES_HOST_AUTH_METHOD).toBe('scram-sha-256')
    expect(postgres.POSTGRES_INITDB_ARGS).toContain('--auth-host=scram-sha-256')
    expect(composeText).not.toMatch(/trust/)
    for (const name of ['api', 'worker', 'scheduler', 'demo']) {
      const env = rendered.services[name]!.environment!
      expect(env.DATABASE_URL, name).toBe(`postgres://postgres:${FILLED.POSTGRES_PASSWORD}@postgres:5432/postgres`)
      expect(env.REDIS_URL, name).toBe(`redis://:${FILLED.REDIS_PASSWORD}@redis:6379`)
    }
  })

  it('runs Redis with requirepass, and its health check authenticates', () => {
    const redis = rendered.services.redis!
    const at = redis.command!.indexOf('--requirepass')
    expect(at).toBeGreaterThan(0)
    expect(redis.command![at + 1]).toBe(FILLED.REDIS_PASSWORD)
    expect(redis.environment!.REDISCLI_AUTH).toBe(FILLED.REDIS_PASSWORD)
  })

  it('runs Grafana without anonymous access, an admin password required, its datasource as analytics_reader', () => {
    const grafana = rendered.services.grafana!.environment!
    expect(grafana.GF_AUTH_ANONYMOUS_ENABLED).toBe('false')
    expect(grafana.GF_SECURITY_ADMIN_PASSWORD).toBe(FILLED.GRAFANA_ADMIN_PASSWORD)
    expect(grafana.GRAFANA_DATABASE_USER).toBe('analytics_reader')
    expect(grafana.GRAFANA_DATABASE_PASSWORD).toBe(FILLED.ANALYTICS_READER_PASSWORD)
    const datasource = parse(readFileSync(new URL('deploy/grafana/provisioning/datasources/codetrail.yml', root), 'utf8')) as {
      datasources: { type: string; user?: string; secureJsonData?: { password?: string } }[]
    }
    const postgres = datasource.datasources.find((source) => source.type === 'grafana-postgresql-datasource')!
    expect(postgres.user).toBe('${GRAFANA_DATABASE_USER}')
    expect(postgres.secureJsonData!.password).toBe('${GRAFANA_DATABASE_PASSWORD}')
  })

  it('sets the analytics_reader password at init from ANALYTICS_READER_PASSWORD', () => {
    const postgres = rendered.services.postgres!
    expect(postgres.environment!.ANALYTICS_READER_PASSWORD).toBe(FILLED.ANALYTICS_READER_PASSWORD)
    expect(postgres.volumes).toContain('./deploy/postgres/init-analytics-reader.sh:/docker-entrypoint-initdb.d/10-analytics-reader.sh:ro')
    const script = readFileSync(new URL('deploy/postgres/init-analytics-reader.sh', root), 'utf8')
    expect(script).toMatch(/ALTER ROLE analytics_reader LOGIN PASSWORD %L/)
  })

  it('documents every variable compose requires in .env.example, with no value filled in', () => {
    const example = readFileSync(new URL('.env.example', root), 'utf8')
    const required = new Set([...composeText.matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((match) => match[1]!))
    expect([...required].sort()).toEqual([...PASSWORDS].sort())
    for (const name of required) expect(example).toMatch(new RegExp(`^${name}=$`, 'm'))
  })
})

describe("docker-compose.yml's PostgreSQL settings", () => {
  /** Where this machine's `postgres` program is, asked of the server once. */
  let binDir: string
  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
    await admin.connect()
    binDir = await postgresBinDir(admin).finally(() => admin.end())
  })

  /** The `-c name=value` settings of the postgres service's command, which must run the server itself. */
  function settingsOf(service: Service): Record<string, string> {
    const [program, ...args] = service.command ?? []
    expect(program).toBe('postgres')
    const settings: Record<string, string> = {}
    for (let i = 0; i < args.length; i += 2) {
      expect(args[i]).toBe('-c')
      const setting = args[i + 1]!
      const at = setting.indexOf('=')
      expect(at, setting).toBeGreaterThan(0)
      settings[setting.slice(0, at)] = setting.slice(at + 1)
    }
    return settings
  }

  /**
   * `name` as PostgreSQL reads it with `settings` (`postgres -C`: the value in the setting's own unit,
   * printed without starting a server); rejects with PostgreSQL's message for a setting it refuses.
   */
  async function readBack(name: string, settings: Record<string, string>): Promise<string> {
    // An empty configuration: every value comes from the command line.
    const dir = mkdtempSync(join(tmpdir(), 'codetrail-settings-'))
    try {
      writeFileSync(join(dir, 'postgresql.conf'), '')
      await ownByPostgres(dir, join(dir, 'postgresql.conf'))
      const args = Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`])
      return (await asPostgres(`${binDir}/postgres`, ['-D', dir, '-C', name, ...args])).trim()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }

  it('gives PostgreSQL 1 GB of shared_buffers unless POSTGRES_SHARED_BUFFERS says otherwise, in values PostgreSQL accepts', async () => {
    const defaults = settingsOf(rendered.services.postgres!)
    expect(defaults).toEqual({ shared_buffers: '1GB' })
    const chosen = settingsOf(render({ ...FILLED, POSTGRES_SHARED_BUFFERS: '6GB' }).services.postgres!)
    expect(chosen).toEqual({ shared_buffers: '6GB' })
    // In 8 kB pages.
    expect(await readBack('shared_buffers', defaults)).toBe(String((1 * 2 ** 30) / 8192))
    expect(await readBack('shared_buffers', chosen)).toBe(String((6 * 2 ** 30) / 8192))
    await expect(readBack('shared_buffers', { shared_buffers: '1GX' })).rejects.toThrow(/invalid value for parameter "shared_buffers"/)
    const example = readFileSync(new URL('.env.example', root), 'utf8')
    expect(example).toMatch(/^# POSTGRES_SHARED_BUFFERS=1GB$/m)
  })

  it('leaves parallel queries room in /dev/shm beyond the 64 MB Docker gives a container', () => {
    expect(rendered.services.postgres!.shm_size).toBe('1gb')
  })
})
