/**
 * npm run demo [-- --chain base|op | --chains base,op] [--duration 90s]
 *
 * codetrail end to end on this machine: a devnet shaped like Base since Denim (`--chain base`, the default:
 * a block every 200 ms, no pre-confirmations) or like a pre-confirming OP chain (`--chain op`: 2 s blocks,
 * pending logs through the pre-confirmed layer) with demo contracts, agents registering their wallets
 * through codetrail's API and sending attributed transactions (on `op` pending first, then confirmed),
 * small reorgs and (on `op`) dropped pool transactions, and the
 * daemon (all roles) indexing it all into a database of its own, its dashboard at the URL printed first.
 * Ctrl-C stops everything it started. `--chains base,op` runs one devnet of each profile (chain ids 31337 and
 * 31338), the agents sending on both, and one daemon indexing both through a config file it writes. Each
 * devnet has a BuilderCodes registry the daemon indexes; the first agent's code is registered on the
 * second chain's (on the only chain's with one devnet), and its transactions on the first chain carry
 * schema-1 suffixes naming that registry, which codetrail resolves across chains.
 *
 * Environment: DATABASE_URL and REDIS_URL (the servers to use), DEMO_DATABASE (default codetrail_demo,
 * dropped and created fresh on each run), DEMO_REDIS_PREFIX (default codetrail-demo), PORT (API, default
 * 8080 when free), DEMO_RPC_PORT (devnet, default 8545 when free), DEMO_DURATION_MS (stop by itself),
 * DEMO_LOG_FILE (the daemon's JSON log), LOG_LEVEL. With `--chain op`, `--lag <blocks>` makes the devnet's canonical chain lag its
 * flashblocks, as a Base node's does; `--divergence <20%>` makes that share of pre-confirmations guess wrong;
 * at the end the demo prints how many pending logs changed content when their block was sealed.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { pino } from 'pino'
import { createBuilderCodeClient } from '../../src/api/index.js'
import { loadConfig } from '../../src/config/index.js'
import { startDaemon } from '../../src/daemon.js'
import { stopServices } from '../../src/internal/shutdown.js'
import { createDevnet, DEFAULT_BLOCK_TIME_MS, DENIM_BLOCK_TIME_MS, freePort, type Devnet } from '../devnet/index.js'
import type { Logger } from '../../src/internal/logger.js'
import { anvilAccount, fixtureClient } from '../fixtures/chain.js'
import { startAgents, type Agent, type ChaosSchedule } from './agents.js'
import { DROPPED_AGENT_ACCOUNT, EOA_AGENT_ACCOUNTS, prepareChainState, registerBuilderCode, type DemoChainState } from './chainState.js'
import type { SuffixRegistry } from './suffixes.js'
import { DEFAULTS, parseOptions, UsageError, USAGE, type Options } from './options.js'
import { clearRedisPrefix } from '../../src/queue/index.js'
import { checkPostgres, checkRedisServer, recreateDatabase } from './servers.js'
import { describeChain, readFigures, readIndexedHead, startView } from './view.js'
import { buildWeb } from '../../scripts/build-web.js'

/** anvil's own chain id, so wallets and tools that know anvil recognise the devnet. */
const CHAIN_ID = 31337
/** The second devnet's chain id when the demo runs two chains. */
const SECOND_CHAIN_ID = 31338
/** anvil's `finalized` trails its head by two epochs: 8 blocks (16 s on `op`, 1.6 s on `base`), so finalized rows appear within the minute. */
const SLOTS_IN_AN_EPOCH = 4
const SCHEDULE: ChaosSchedule = { firstReorgMs: 10_000, reorgEveryMs: 20_000, firstDropMs: 5_000, dropEveryMs: 15_000 }
/** A pool transaction is dropped after it was served as pending: only a pre-confirming chain serves it. */
const NO_DROPS = { firstDropMs: Number.POSITIVE_INFINITY, dropEveryMs: Number.POSITIVE_INFINITY }
/** Past this, a stop that hangs is cut short: anvil is killed and the demo exits 1. */
const SHUTDOWN_TIMEOUT_MS = 30_000
const CTRL_C = 0x03
const Q = 0x71

async function isPortFree(candidate: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(candidate, () => server.close(() => resolve(true)))
  })
}

/** The port asked for; else the usual one when it is free, else any free one. */
async function choosePort(asked: number | undefined, usual: number): Promise<number> {
  if (asked !== undefined) return asked
  return (await isPortFree(usual)) ? usual : freePort()
}

/** Registers every agent's wallet with `POST /v1/agents/builder-codes`, as an agent would. */
async function registerAgents(apiUrl: string, chain: DemoChainState): Promise<{ agents: Agent[]; dropped: Agent & { kind: 'eoa' } }> {
  const client = createBuilderCodeClient(apiUrl)
  const register = async <T extends Omit<Agent, 'code'>>(agent: T) =>
    ({ ...agent, code: (await client.register(agent.address)).builderCode }) as T & { code: string }
  const plainAgent = (name: string, account: number) =>
    register({ name, kind: 'eoa' as const, account, address: anvilAccount(account).address })
  const [plain, smart, dropped] = await Promise.all([
    Promise.all(EOA_AGENT_ACCOUNTS.map((account, i) => plainAgent(`agent-${i + 1}`, account))),
    Promise.all(
      chain.smartAccounts.map((smartAccount) =>
        register({ name: `smart-${smartAccount.version}`, kind: 'smart' as const, smartAccount, address: smartAccount.address }),
      ),
    ),
    plainAgent('agent-6 (drops)', DROPPED_AGENT_ACCOUNT),
  ])
  return { agents: [...plain, ...smart], dropped }
}

/** An agent as it acts on another devnet: the same wallet, or the smart account of its version deployed there. */
function agentOn(agent: Agent, state: DemoChainState): Agent {
  if (agent.kind === 'eoa') return agent
  const smartAccount = state.smartAccounts.find((account) => account.version === agent.smartAccount.version)
  if (!smartAccount) throw new Error(`no ${agent.smartAccount.version} smart account on the second devnet`)
  return { ...agent, smartAccount }
}

function hostOf(url: string, defaultPort: number): string {
  const { hostname, port } = new URL(url)
  return `${hostname}:${port || defaultPort}`
}

type Cleanup = { name: string; run: () => Promise<unknown> }

type RunContext = {
  signal: AbortSignal
  /** What `run` started, in order; the caller stops them in reverse. */
  cleanups: Cleanup[]
  /** Every anvil process started, checked and killed as the process exits. */
  children: Set<ChildProcess>
  say: (line: string) => void
}

/** `codetrail_pending_logs_confirmed_total` by content (changed, unchanged), summed over chains, from the API's `/metrics`. */
async function readPendingConfirmations(apiUrl: string): Promise<{ changed: number; unchanged: number }> {
  const text = await (await fetch(`${apiUrl}/metrics`)).text()
  const sum = (content: string) =>
    [...text.matchAll(new RegExp(`^codetrail_pending_logs_confirmed_total\\{[^}]*content="${content}"[^}]*\\} (\\S+)$`, 'gm'))].reduce(
      (total, match) => total + Number(match[1]),
      0,
    )
  return { changed: sum('changed'), unchanged: sum('unchanged') }
}

/** Runs the demo until the duration ends or a stop is asked; resolves the closing line on pending divergence. */
async function run(options: Options & { apiPort: number }, { signal, cleanups, children, say }: RunContext): Promise<string | undefined> {
  const stopIfAsked = () => {
    if (signal.aborted) throw new Error('stopped')
  }
  const databaseUrl = await recreateDatabase(options.databaseUrl, options.database)
  await clearRedisPrefix(options.redisUrl, options.redisPrefix)
  const destination = pino.destination({ dest: options.logFile, sync: true, append: false, mkdir: true })
  const logger: Logger = pino({ level: process.env.LOG_LEVEL || 'info', base: { service: 'codetrail', role: 'demo' } }, destination)
  say(
    `  database  ${options.database} on ${hostOf(options.databaseUrl, 5432)} (dropped and created fresh on each run; DEMO_DATABASE renames it)`,
  )
  say(`  redis     ${hostOf(options.redisUrl, 6379)}, key prefix ${options.redisPrefix}`)
  say(`  log       ${options.logFile} (JSON log of the daemon, the devnet and the agents)`)
  stopIfAsked()

  const stateDir = mkdtempSync(join(tmpdir(), 'codetrail-demo-'))
  cleanups.push({ name: 'chain state', run: async () => rmSync(stateDir, { recursive: true, force: true }) })
  // Built from the sources on each run, beside the chain state: never stale, and dist/ is left alone.
  const dashboard = await buildWeb({ outdir: join(stateDir, 'web') })
  const setupStarted = Date.now()
  const chainIds = options.chains.map((_, i) => (i === 0 ? CHAIN_ID : SECOND_CHAIN_ID))
  const states = await Promise.all(
    chainIds.map((chainId) => prepareChainState(join(stateDir, `state-${chainId}.json`), chainId, (anvil) => children.add(anvil.process))),
  )
  const chain = states[0]!
  const { contracts } = chain
  say(
    `  chain     deployed DUSD ${contracts.tokens[0]}, DETH ${contracts.tokens[1]}, Swap ${contracts.swap}, ` +
      `EntryPoint v0.6/v0.7/v0.8 (${((Date.now() - setupStarted) / 1000).toFixed(1)} s)`,
  )
  stopIfAsked()

  const devnets: {
    devnet: Devnet
    chainId: number
    state: DemoChainState
    shape: { profile: typeof options.chain; blockTimeMs: number; preconfirmations: boolean }
  }[] = []
  for (const [i, profile] of options.chains.entries()) {
    const preconfirming = profile === 'op'
    const blockTimeMs = preconfirming ? DEFAULT_BLOCK_TIME_MS : DENIM_BLOCK_TIME_MS
    const chainId = chainIds[i]!
    const devnet: Devnet = await createDevnet({
      profile,
      blockTimeMs,
      port: i === 0 ? await choosePort(options.rpcPort, DEFAULTS.rpcPort) : await freePort(),
      loadState: join(stateDir, `state-${chainId}.json`),
      chainId,
      extraArgs: ['--slots-in-an-epoch', String(SLOTS_IN_AN_EPOCH)],
      ...(preconfirming ? { canonicalLag: options.canonicalLag, divergence: options.divergence } : {}),
      logger,
    })
    children.add(devnet.anvil.process)
    cleanups.push({ name: `devnet ${chainId}`, run: () => devnet.stop() })
    const shape = { profile, blockTimeMs, preconfirmations: preconfirming }
    devnets.push({ devnet, chainId, state: states[i]!, shape })
    say(
      `  devnet    ${devnet.url} (${devnet.wsUrl}), chain ${chainId}, ${describeChain(shape)}; anvil pid ${devnet.anvil.process.pid} at ${devnet.anvilUrl}`,
    )
  }
  const { devnet, shape: chainShape } = devnets[0]!
  const preconfirmations = devnets.some((d) => d.shape.preconfirmations)
  if (options.canonicalLag > 0 || options.divergence > 0) {
    say(
      `  pending   canonical chain ${options.canonicalLag} block(s) behind the flashblocks; ` +
        `${Math.round(options.divergence * 100)} % of pre-confirmed transactions diverge from what is sealed`,
    )
  }
  stopIfAsked()

  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: options.redisUrl,
    REDIS_PREFIX: options.redisPrefix,
    RPC_URL: devnet.url,
    RPC_WS_URL: devnet.wsUrl,
    BUILDER_CODES_REGISTRY: chain.registry,
    BUILDER_CODES_REGISTRY_START_BLOCK: '0',
    PORT: String(options.apiPort),
    DASHBOARD_DIR: dashboard.outdir,
    START_BLOCK: 'latest',
    LOG_LEVEL: process.env.LOG_LEVEL,
  }
  let config
  if (devnets.length === 1) config = loadConfig(env)
  else {
    // Several chains are a config file's: one entry per devnet, named by its profile.
    const file = join(stateDir, 'codetrail.config.yaml')
    const entries = devnets.map(
      ({ devnet: d, chainId, shape, state }) =>
        `  - { id: ${chainId}, name: ${shape.profile}, rpc: "${d.url}", ws: "${d.wsUrl}", startBlock: latest, registry: { address: "${state.registry}", startBlock: 0 } }\n`,
    )
    writeFileSync(file, `chains:\n${entries.join('')}`)
    config = loadConfig(env, { file })
    say(`  config    ${file} (${devnets.map((d) => `${d.shape.profile} ${d.chainId}`).join(', ')})`)
  }
  const services = await startDaemon(config, 'all', logger)
  cleanups.push({ name: 'daemon', run: () => stopServices(services, logger) })
  const apiUrl = `http://127.0.0.1:${config.port}`
  say(`  daemon    codetrail, all roles, indexing the devnet from block ${await fixtureClient(devnet.url).getBlockNumber()}; API ${apiUrl}`)
  stopIfAsked()

  const registered = await registerAgents(apiUrl, chain)
  const { dropped } = registered
  const codes = [...registered.agents, dropped].map((agent) => `${agent.name} ${agent.code}`).join(', ')
  say(`  agents    registered through POST ${apiUrl}/v1/agents/builder-codes: ${codes}`)
  stopIfAsked()
  // The first agent's schema-1 suffixes on the first chain name the registry of the last (another chain's, when there are two).
  const registryChain = devnets.at(-1)!
  const schema1Registry: SuffixRegistry = { address: registryChain.state.registry, chainId: registryChain.chainId }
  const [first, ...others] = registered.agents
  await registerBuilderCode(registryChain.devnet.url, schema1Registry.address, first!.code, first!.address)
  const agents: Agent[] = [{ ...first!, registry: schema1Registry }, ...others]
  say(
    `  registry  ${first!.name}'s code ${first!.code} registered on the BuilderCodes registry ${schema1Registry.address} of chain ${schema1Registry.chainId}; its schema-1 suffixes on chain ${CHAIN_ID} name it`,
  )
  stopIfAsked()

  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'codetrail-demo-view' })
  pool.on('error', () => {})
  cleanups.push({ name: 'view database pool', run: () => pool.end() })
  const runs = devnets.map((d) =>
    startAgents({
      devnet: d.devnet,
      contracts: d.state.contracts,
      // Schema 1 is the first devnet's: the other's agents carry no registry.
      agents: d === devnets[0] ? agents : registered.agents.map((agent) => agentOn(agent, d.state)),
      droppedAgent: dropped,
      schedule: d.shape.preconfirmations ? SCHEDULE : { ...SCHEDULE, ...NO_DROPS },
      indexedHead: () => readIndexedHead(pool, d.chainId),
      logger,
    }),
  )
  const running = runs[0]!
  cleanups.push({ name: 'agents', run: () => Promise.all(runs.map((r) => r.stop())) })
  const head = fixtureClient(devnet.url)
  const view = startView({
    read: async () => {
      const [figures, chainHead] = await Promise.all([
        readFigures(pool, CHAIN_ID),
        head.getBlockNumber({ cacheTime: 0 }).then(Number, () => null),
      ])
      return { ...figures, chainHead }
    },
    context: {
      startedAt: Date.now(),
      chain: chainShape,
      apiUrl,
      databaseUrl,
      databaseName: options.database,
      redisPrefix: options.redisPrefix,
      devnetUrl: devnet.url,
      logFile: options.logFile,
      agents: new Map([...agents, dropped].map((agent) => [agent.code, { name: agent.name, address: agent.address }])),
      stats: running.stats,
    },
    tty: process.stdout.isTTY === true,
    write: (text) => process.stdout.write(text),
    size: () => ({ columns: process.stdout.columns, rows: process.stdout.rows }),
    onError: (error) => logger.warn({ err: error }, 'demo view: could not read the figures'),
  })
  cleanups.push({ name: 'view', run: () => view.stop() })

  stopIfAsked()
  await new Promise<void>((resolve) => {
    const timer = options.durationMs === undefined ? undefined : setTimeout(resolve, options.durationMs)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve()
      },
      { once: true },
    )
  })
  if (!preconfirmations) return undefined
  const counts = await readPendingConfirmations(apiUrl).catch(() => undefined)
  if (!counts) return undefined
  const { changed, unchanged } = counts
  const confirmed = changed + unchanged
  const share = confirmed === 0 ? 0 : (100 * changed) / confirmed
  return `pending divergence: ${changed} of ${confirmed} confirmed pre-confirmed logs (${share.toFixed(1)} %) changed content when sealed`
}

async function main(): Promise<number> {
  let options: Options
  try {
    options = parseOptions(process.argv.slice(2), process.env)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    if (error.message) process.stderr.write(`demo: ${error.message}\n`)
    process.stderr.write(`${USAGE}\n`)
    return 2
  }
  const say = (line: string) => process.stdout.write(`${line}\n`)

  const problems = (await Promise.all([checkPostgres(options.databaseUrl), checkRedisServer(options.redisUrl)])).filter((p) => p !== null)
  if (problems.length > 0) {
    for (const problem of problems) process.stderr.write(`demo: ${problem}\n`)
    return 1
  }

  const stopping = new AbortController()
  const cleanups: Cleanup[] = []
  // Whatever way the process ends, no anvil it started outlives it.
  const children = new Set<ChildProcess>()
  process.on('exit', () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const onSignal = () => {
    if (!stopping.signal.aborted) return stopping.abort()
    process.stderr.write('demo: stopping at once\n')
    process.exit(130)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  // In raw mode Ctrl-C reaches the demo as a key, not as a SIGINT to its whole process group (anvil
  // included), so the daemon stops against a live node and nothing dies out of order.
  const keyboard = process.stdin.isTTY ? process.stdin : undefined
  keyboard?.setRawMode(true)
  keyboard?.on('data', (keys: Buffer) => {
    if (keys.includes(CTRL_C) || keys.includes(Q)) onSignal()
  })

  const apiPort = await choosePort(options.apiPort, DEFAULTS.apiPort)
  say(`dashboard  http://127.0.0.1:${apiPort}/   (served once the daemon has started, in a few seconds)`)
  say('codetrail demo: a devnet with simulated agents, indexed by codetrail · Ctrl-C or q stops everything it started')
  let code = 0
  let divergence: string | undefined
  try {
    divergence = await run({ ...options, apiPort }, { signal: stopping.signal, cleanups, children, say })
  } catch (error) {
    if (!stopping.signal.aborted) {
      process.stderr.write(`demo: ${(error as Error).message}\n`)
      code = 1
    }
  }
  const watchdog = setTimeout(() => {
    process.stderr.write(`demo: stopping took over ${SHUTDOWN_TIMEOUT_MS / 1000} s; killing what is left\n`)
    process.exit(1)
  }, SHUTDOWN_TIMEOUT_MS)
  let announced = false
  for (const cleanup of cleanups.reverse()) {
    // The view draws its last frame before anything else is printed below it.
    if (cleanup.name !== 'view' && !announced) {
      say('stopping: the agents, the daemon and the devnet…')
      announced = true
    }
    await cleanup
      .run()
      .catch((error: unknown) => process.stderr.write(`demo: stopping the ${cleanup.name} failed: ${(error as Error).message}\n`))
  }
  clearTimeout(watchdog)
  keyboard?.setRawMode(false)
  keyboard?.pause()
  const left = [...children].filter((child) => child.exitCode === null && child.signalCode === null)
  if (left.length > 0) {
    process.stderr.write(`demo: anvil pid ${left.map((child) => child.pid).join(', ')} still running after the stop\n`)
    return 1
  }
  if (divergence) say(divergence)
  say(`stopped: nothing the demo started is running. The data stays in database ${options.database} until the next run.`)
  return code
}

process.exit(await main())
