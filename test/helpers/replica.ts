import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from '../../harness/devnet/anvil.js'
import { ADMIN_DATABASE_URL } from '../../harness/services.js'
import { asPostgres, ownByPostgres, postgresBinDir } from './postgresTools.js'

/** The line `pg_basebackup` needs in the primary's pg_hba.conf (the `all` database does not match replication connections). */
const REPLICATION_RULE = 'host replication all 127.0.0.1/32 trust'
/** Slots of these replicas: the primary keeps the WAL a standby still needs, however busy other tests keep it. */
const SLOT_PREFIX = 'codetrail_test_replica_'
/** Longest wait for the replica to replay what the primary wrote. */
const CATCH_UP_MS = 120_000
/** Settings a hot standby must hold at least at the primary's values, or it refuses to start. */
const STANDBY_MINIMUMS = [
  'max_connections',
  'max_worker_processes',
  'max_wal_senders',
  'max_prepared_transactions',
  'max_locks_per_transaction',
]

export type Replica = {
  /** `ADMIN_DATABASE_URL`'s user on the replica, for `database`. */
  urlOf: (database: string) => string
  pauseReplay: () => Promise<void>
  resumeReplay: () => Promise<void>
  /** Resolves once the replica has replayed everything the primary had written when called. */
  caughtUp: () => Promise<void>
  /** A query on the replica's `database`. */
  query: <T extends pg.QueryResultRow>(database: string, text: string, values?: unknown[]) => Promise<T[]>
  stop: () => Promise<void>
}

/** Lets local replication connections in, once (a reload, never a restart: other tests use the cluster). */
async function allowReplication(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ hba_file: string }>('SHOW hba_file')
  const file = rows[0]!.hba_file
  const rule = new RegExp(`^${REPLICATION_RULE.replace(/[./]/g, '\\$&').replace(/ /g, '\\s+')}\\s*$`, 'm')
  if (rule.test(readFileSync(file, 'utf8'))) return
  appendFileSync(file, `\n# local streaming replicas (codetrail's test/read-replica.test.ts)\n${REPLICATION_RULE}\n`)
  await admin.query('SELECT pg_reload_conf()')
}

/**
 * A hot standby of the cluster at `ADMIN_DATABASE_URL`: `pg_basebackup` into a temporary directory,
 * streaming from the primary on a free port, until `stop` removes it.
 */
export async function startReplica(): Promise<Replica> {
  const primaryUrl = new URL(ADMIN_DATABASE_URL)
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
  await admin.connect()
  let settings: { name: string; setting: string }[]
  let binDir: string
  try {
    await allowReplication(admin)
    // A slot left by a killed run would hold the primary's WAL for ever.
    await admin.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE $1 AND NOT active`, [
      `${SLOT_PREFIX}%`,
    ])
    ;({ rows: settings } = await admin.query('SELECT name, setting FROM pg_settings WHERE name = ANY($1)', [STANDBY_MINIMUMS]))
    binDir = await postgresBinDir(admin)
  } finally {
    await admin.end()
  }

  const dir = mkdtempSync(join(tmpdir(), 'codetrail-replica-'))
  const data = join(dir, 'data')
  await ownByPostgres(dir)
  const port = await freePort()
  const slot = `${SLOT_PREFIX}${randomBytes(4).toString('hex')}`
  let started = false
  const stop = async () => {
    if (started) await asPostgres(`${binDir}/pg_ctl`, ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {})
    started = false
    rmSync(dir, { recursive: true, force: true })
    await dropSlot()
  }
  async function dropSlot() {
    const primary = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
    await primary.connect()
    await primary
      .query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, [slot])
      .finally(() => primary.end())
  }
  try {
    // The rule just added takes effect once the postmaster has reloaded: try again shortly.
    for (let attempt = 1; ; attempt++) {
      try {
        await asPostgres(`${binDir}/pg_basebackup`, [
          '-h',
          primaryUrl.hostname,
          '-p',
          primaryUrl.port || '5432',
          '-U',
          decodeURIComponent(primaryUrl.username) || 'postgres',
          // A throwaway copy: no fsync, which on a busy machine is most of its time.
          '-D',
          data,
          '-X',
          'stream',
          '-R',
          '--checkpoint=fast',
          '--no-sync',
          '-C',
          '-S',
          slot,
        ])
        break
      } catch (error) {
        rmSync(data, { recursive: true, force: true })
        await dropSlot()
        if (attempt === 5) throw error
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    }
    const files: Record<string, string> = {
      'postgresql.conf': [
        `port = ${port}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${dir}'`,
        'hot_standby = on',
        'fsync = off',
        // Replay cancels a conflicting read at once rather than after 30 s, so tests meet conflicts quickly.
        'max_standby_streaming_delay = 0',
        'shared_buffers = 16MB',
        ...settings.map(({ name, setting }) => `${name} = ${setting}`),
        '',
      ].join('\n'),
      'pg_hba.conf': 'local all all trust\nhost all all 127.0.0.1/32 trust\n',
      'pg_ident.conf': '',
    }
    for (const [name, text] of Object.entries(files)) writeFileSync(join(data, name), text)
    await ownByPostgres(...Object.keys(files).map((name) => join(data, name)))
    await asPostgres(`${binDir}/pg_ctl`, ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '240', 'start'])
    started = true
  } catch (error) {
    await stop()
    throw error
  }

  const urlOf = (database: string) => {
    const url = new URL(ADMIN_DATABASE_URL)
    url.port = String(port)
    url.pathname = `/${database}`
    return url.toString()
  }
  async function query<T extends pg.QueryResultRow>(database: string, text: string, values: unknown[] = []): Promise<T[]> {
    const client = new pg.Client({ connectionString: urlOf(database) })
    await client.connect()
    try {
      return (await client.query<T>(text, values)).rows
    } finally {
      await client.end()
    }
  }
  const database = primaryUrl.pathname.slice(1) || 'postgres'
  return {
    urlOf,
    query,
    pauseReplay: async () => void (await query(database, 'SELECT pg_wal_replay_pause()')),
    resumeReplay: async () => void (await query(database, 'SELECT pg_wal_replay_resume()')),
    async caughtUp() {
      const primary = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
      await primary.connect()
      const { rows } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn').finally(() => primary.end())
      for (const deadline = Date.now() + CATCH_UP_MS; Date.now() < deadline; ) {
        const [row] = await query<{ done: boolean }>(database, 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [rows[0]!.lsn])
        if (row!.done) return
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const log = readFileSync(join(dir, 'server.log'), 'utf8').split('\n').slice(-10).join('\n')
      throw new Error(`the replica did not replay up to ${rows[0]!.lsn} in ${CATCH_UP_MS} ms; its log ends:\n${log}`)
    },
    stop,
  }
}
