/**
 * The demo's live terminal view: figures read from the demo database and the devnet, redrawn in place
 * on a terminal, or written as one plain line at a time when stdout is not a terminal.
 */
import type pg from 'pg'
import type { AgentStats } from './agents.js'

const TTY_REFRESH_MS = 1_000
const PLAIN_REFRESH_MS = 5_000
/** logs/s is measured over this much of the recent past. */
const RATE_WINDOW_MS = 5_000
const CODE_WIDTH = 13
const WHO_WIDTH = 32
const COUNT_WIDTH = 10

const BOLD = '\x1b[1m'
const RESET = '\x1b[0m'
const CLEAR_BELOW = '\x1b[J'
const HOME = '\x1b[H'
const HIDE_CURSOR = '\x1b[?25l'
const SHOW_CURSOR = '\x1b[?25h'
const linesUp = (n: number) => `\x1b[${n}F`

export type CodeFigures = {
  builderCode: string
  walletAddress: string | null
  pending: number
  confirmed: number
  finalized: number
  removed: number
}

export type Figures = {
  chainHead: number | null
  indexedHead: number | null
  finalizedBlock: number | null
  logs: number
  pendingLogs: number
  removedLogs: number
  logsPerSecond: number
  reorgs: number
  transactions: { attributed: number; withoutSuffix: number; malformed: number }
  /** Schema-1 transactions by what the registry their suffix names answered (on this chain or another). */
  registry: { registered: number; notRegistered: number; unknown: number }
  codes: CodeFigures[]
}

export type ViewContext = {
  startedAt: number
  /** The devnet's profile and block time; without pre-confirmations no pending figure is shown. */
  chain: { profile: string; blockTimeMs: number; preconfirmations: boolean }
  apiUrl: string
  /** The demo database's URL, for the psql line. */
  databaseUrl: string
  databaseName: string
  redisPrefix: string
  devnetUrl: string
  logFile: string
  /** Agent names by builder code. */
  agents: ReadonlyMap<string, { name: string; address: string }>
  stats: AgentStats
}

type Row = Record<string, string | number | null>
const count = (value: string | number | null | undefined) => Number(value ?? 0)
const block = (value: string | number | null | undefined) => (value === null || value === undefined ? null : Number(value))

/** The last block the head follower stored. */
export async function readIndexedHead(pool: pg.Pool, chainId: number): Promise<number | null> {
  const { rows } = await pool.query<Row>('SELECT live_block FROM chain_state WHERE chain_id = $1', [chainId])
  return block(rows[0]?.live_block)
}

/** Everything but the rate, from the database: analytics views where they say it, sync tables for the rest. */
export async function readFigures(pool: pg.Pool, chainId: number): Promise<Omit<Figures, 'chainHead' | 'logsPerSecond'>> {
  const [state, logs, reorgs, transactions, registry, codes] = await Promise.all([
    pool.query<Row>('SELECT live_block, finalized_block FROM chain_state WHERE chain_id = $1', [chainId]),
    pool.query<Row>(
      `SELECT count(*) AS logs,
              count(*) FILTER (WHERE status = 'pending' AND NOT removed) AS pending,
              count(*) FILTER (WHERE removed) AS removed
         FROM analytics.logs WHERE chain_id = $1`,
      [chainId],
    ),
    pool.query<Row>('SELECT count(*) AS reorgs FROM reorgs WHERE chain_id = $1', [chainId]),
    pool.query<Row>(
      `SELECT count(*) FILTER (WHERE has_suffix AND malformed_reason IS NULL) AS attributed,
              count(*) FILTER (WHERE NOT has_suffix) AS without_suffix,
              count(*) FILTER (WHERE malformed_reason IS NOT NULL) AS malformed
         FROM transactions WHERE chain_id = $1`,
      [chainId],
    ),
    pool.query<Row>(
      `SELECT count(*) FILTER (WHERE registry_verified) AS registered,
              count(*) FILTER (WHERE NOT registry_verified) AS not_registered,
              count(*) FILTER (WHERE registry_verified IS NULL) AS unknown
         FROM transactions WHERE chain_id = $1 AND registry_address IS NOT NULL AND NOT removed`,
      [chainId],
    ),
    pool.query<Row>(
      `SELECT builder_code, wallet_address,
              count(*) FILTER (WHERE status = 'pending' AND NOT removed) AS pending,
              count(*) FILTER (WHERE status = 'confirmed' AND NOT removed) AS confirmed,
              count(*) FILTER (WHERE status = 'finalized' AND NOT removed) AS finalized,
              count(*) FILTER (WHERE removed) AS removed
         FROM analytics.attributed_transactions WHERE chain_id = $1
        GROUP BY builder_code, wallet_address ORDER BY builder_code`,
      [chainId],
    ),
  ])
  const s = state.rows[0]
  const l = logs.rows[0]
  const t = transactions.rows[0]
  return {
    indexedHead: block(s?.live_block),
    finalizedBlock: block(s?.finalized_block),
    logs: count(l?.logs),
    pendingLogs: count(l?.pending),
    removedLogs: count(l?.removed),
    reorgs: count(reorgs.rows[0]?.reorgs),
    transactions: { attributed: count(t?.attributed), withoutSuffix: count(t?.without_suffix), malformed: count(t?.malformed) },
    registry: {
      registered: count(registry.rows[0]?.registered),
      notRegistered: count(registry.rows[0]?.not_registered),
      unknown: count(registry.rows[0]?.unknown),
    },
    codes: codes.rows.map((row) => ({
      builderCode: String(row.builder_code),
      walletAddress: row.wallet_address === null ? null : String(row.wallet_address),
      pending: count(row.pending),
      confirmed: count(row.confirmed),
      finalized: count(row.finalized),
      removed: count(row.removed),
    })),
  }
}

/** logs/s over the last `RATE_WINDOW_MS`, from successive totals. */
export function createRateMeter(windowMs = RATE_WINDOW_MS) {
  const samples: { at: number; total: number }[] = []
  return (total: number, at: number): number => {
    samples.push({ at, total })
    while (samples.length > 2 && at - samples[1]!.at >= windowMs) samples.shift()
    const first = samples[0]!
    return at > first.at ? ((total - first.total) * 1000) / (at - first.at) : 0
  }
}

export function formatElapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000)
  const minutes = Math.floor(seconds / 60)
  return `${minutes}:${String(seconds % 60).padStart(2, '0')}`
}

const shortAddress = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`
const n = (value: number | null) => (value === null ? '–' : value.toLocaleString('en-US'))

/** Who a code belongs to, as the table shows it. */
function owner(code: CodeFigures, context: ViewContext): string {
  const agent = context.agents.get(code.builderCode)
  if (agent) return `${agent.name} ${shortAddress(agent.address)}`
  return code.walletAddress ? shortAddress(code.walletAddress) : '(not registered here)'
}

/** The URL without its password: psql asks for it (or reads PGPASSWORD), and the screen never shows it. */
function withoutPassword(url: string): string {
  const parsed = new URL(url)
  parsed.password = ''
  return parsed.toString()
}

/** What stays the same while the demo runs: the dashboard and API addresses, lines a newcomer can paste (two `curl`s and a `psql`), where the data goes. */
export function aboutLines(context: ViewContext): string[] {
  const [code, agent] = [...context.agents.entries()][0] ?? ['bc_00000000', { address: '0x0000000000000000000000000000000000000000' }]
  return [
    `  dashboard ${context.apiUrl}/`,
    `  API       ${context.apiUrl}   (OpenAPI docs at ${context.apiUrl}/docs)`,
    `  try       curl -s '${context.apiUrl}/v1/attributions?builderCode=${code}&limit=3'`,
    `            curl -s ${context.apiUrl}/v1/agents/builder-codes/${agent.address.toLowerCase()}`,
    `            psql '${withoutPassword(context.databaseUrl)}' -c "SELECT block_number, tx_hash, builder_code, wallet_address, status, removed FROM analytics.attributed_transactions ORDER BY block_number DESC LIMIT 10"`,
    `  data      database ${context.databaseName} (created fresh on each run) · Redis prefix ${context.redisPrefix} · log ${context.logFile}`,
    '',
  ]
}

/** `base: 200 ms blocks, no pre-confirmations` or `op: 2 s blocks, pre-confirmed through pending`. */
export function describeChain(chain: ViewContext['chain']): string {
  const blocks = chain.blockTimeMs >= 1000 ? `${chain.blockTimeMs / 1000} s` : `${chain.blockTimeMs} ms`
  return `${chain.profile}: ${blocks} blocks, ${chain.preconfirmations ? 'pre-confirmed through pending' : 'no pre-confirmations'}`
}

/** The status columns of the per-code table: no pending one on a chain without pre-confirmations. */
const statusColumns = (context: ViewContext) =>
  (['pending', 'confirmed', 'finalized', 'removed'] as const).filter((status) => status !== 'pending' || context.chain.preconfirmations)

/** The part of the terminal view that is redrawn: short enough for a 24-row terminal. */
export function renderFrame(figures: Figures, context: ViewContext, now: number): string[] {
  const { stats } = context
  const columns = statusColumns(context)
  const header = [
    `${'builder code'.padEnd(CODE_WIDTH)}${'agent / wallet'.padEnd(WHO_WIDTH)}`,
    ...columns.map((h) => h.padStart(COUNT_WIDTH)),
  ].join('')
  // The demo's agents in the order they were registered, then codes nobody registered here.
  const order = [...context.agents.keys()]
  const rank = (code: CodeFigures) => {
    const i = order.indexOf(code.builderCode)
    return i === -1 ? order.length : i
  }
  const codes = [...figures.codes].sort((a, b) => rank(a) - rank(b) || a.builderCode.localeCompare(b.builderCode))
  const codeRows = codes.map((code) =>
    [
      code.builderCode.padEnd(CODE_WIDTH),
      owner(code, context).padEnd(WHO_WIDTH),
      ...columns.map((status) => n(code[status]).padStart(COUNT_WIDTH)),
    ].join(''),
  )
  return [
    `${BOLD}codetrail demo${RESET} · running ${formatElapsed(now - context.startedAt)} · Ctrl-C or q stops everything it started`,
    '',
    `  chain     ${describeChain(context.chain)} · head ${n(figures.chainHead)} · indexed ${n(figures.indexedHead)} · finalized ${n(figures.finalizedBlock)}   (devnet ${context.devnetUrl})`,
    `  logs      ${n(figures.logs)} stored · ${context.chain.preconfirmations ? `${n(figures.pendingLogs)} pending · ` : ''}${n(figures.removedLogs)} removed · ${figures.logsPerSecond.toFixed(1)} logs/s`,
    `  txs       ${n(figures.transactions.attributed)} attributed · ${n(figures.transactions.withoutSuffix)} without a suffix · ${n(figures.transactions.malformed)} malformed suffixes`,
    `  reorgs    ${n(figures.reorgs)} handled by codetrail (${stats.reorgs} caused) · pool transactions dropped before mining: ${stats.dropped}`,
    `  agents    ${n(stats.transactions)} transactions sent · ${n(stats.userOperations)} as user operations · ${stats.errors} errors`,
    `  suffixes  ${n(stats.bySuffix.schema0)} schema 0 · ${n(stats.bySuffix['schema0-two-codes'])} schema 0 with two codes · ${n(stats.bySuffix.schema1)} schema 1 · ${n(stats.bySuffix.schema2)} schema 2 · ${n(stats.bySuffix.none)} none · ${n(stats.bySuffix.malformed)} malformed`,
    `  registry  schema 1, as the registry each names answers: ${n(figures.registry.registered)} registered · ${n(figures.registry.notRegistered)} not registered · ${n(figures.registry.unknown)} unknown`,
    '',
    `  ${header}`,
    ...(codeRows.length > 0 ? codeRows.map((row) => `  ${row}`) : ['  (no attributions yet)']),
  ]
}

/** One plain line of figures, for logs and pipes. */
export function renderLine(figures: Figures, context: ViewContext, now: number): string {
  const totals = figures.codes.reduce(
    (sum, code) => ({
      pending: sum.pending + code.pending,
      confirmed: sum.confirmed + code.confirmed,
      finalized: sum.finalized + code.finalized,
      removed: sum.removed + code.removed,
    }),
    { pending: 0, confirmed: 0, finalized: 0, removed: 0 },
  )
  const perCode = figures.codes.map((code) => `${code.builderCode}=${code.pending + code.confirmed + code.finalized}`).join(' ')
  const { preconfirmations } = context.chain
  return [
    `[${formatElapsed(now - context.startedAt)}] ${context.chain.profile} head ${n(figures.chainHead)} indexed ${n(figures.indexedHead)}`,
    `logs ${figures.logs} (${preconfirmations ? `${figures.pendingLogs} pending, ` : ''}${figures.removedLogs} removed) ${figures.logsPerSecond.toFixed(1)}/s`,
    `attributions ${statusColumns(context)
      .map((status) => `${status} ${totals[status]}`)
      .join(' ')}`,
    `reorgs ${figures.reorgs} (caused ${context.stats.reorgs}) dropped ${context.stats.dropped}`,
    `sent ${context.stats.transactions} (${context.stats.userOperations} user ops)`,
    `codes ${perCode || '–'}`,
  ].join(' | ')
}

export type StartViewParameters = {
  read: () => Promise<Omit<Figures, 'logsPerSecond'>>
  context: ViewContext
  tty: boolean
  write: (text: string) => void
  /** Terminal size, to know how many rows a wrapped frame takes and whether it fits. */
  size?: () => { columns?: number; rows?: number }
  onError?: (error: unknown) => void
}

/** Draws the view until `stop`, which draws it a last time. */
export function startView({ read, context, tty, write, size = () => ({}), onError }: StartViewParameters) {
  const rate = createRateMeter()
  let drawn = 0
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  let drawing: Promise<void> = Promise.resolve()

  // Rows a line takes on screen: long lines (the psql one) wrap rather than being cut, so they stay pasteable.
  const rows = (line: string) => {
    const width = size().columns
    const visible = line.replace(/\x1b\[[0-9;]*m/g, '').length
    return width ? Math.max(1, Math.ceil(visible / width)) : 1
  }

  async function draw() {
    const now = Date.now()
    let figures: Figures
    try {
      const raw = await read()
      figures = { ...raw, logsPerSecond: rate(raw.logs, now) }
    } catch (error) {
      onError?.(error)
      return
    }
    if (!tty) {
      write(`${renderLine(figures, context, now)}\n`)
      return
    }
    const lines = renderFrame(figures, context, now)
    // A frame taller than the screen cannot be reached by moving up: start again from the top instead.
    const height = size().rows
    const back =
      drawn === 0 ? HIDE_CURSOR : height !== undefined && drawn >= height ? `${HOME}${CLEAR_BELOW}` : `${linesUp(drawn)}${CLEAR_BELOW}`
    write(`${back}${lines.join('\n')}\n`)
    drawn = lines.reduce((sum, line) => sum + rows(line), 0)
  }

  const schedule = () => {
    timer = setTimeout(
      () => {
        drawing = draw().finally(() => {
          if (!stopped) schedule()
        })
      },
      tty ? TTY_REFRESH_MS : PLAIN_REFRESH_MS,
    )
  }
  write(`${aboutLines(context).join('\n')}\n`)
  drawing = draw().finally(schedule)

  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await drawing
      clearTimeout(timer)
      await draw()
      if (tty) write(SHOW_CURSOR)
    },
  }
}
