import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Attribution } from 'ox/erc8021'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import type { Address, Hash } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBuilderCodeClient } from '../src/api/index.js'
import { createDevnet, freePort, type Devnet } from '../harness/devnet/index.js'
import { anvilAccount, artifacts, buildChain, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { ROOT, runTs, spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

/** Screenshots of every page, for a person to look at (git-ignored). */
const ARTIFACTS = join(ROOT, 'test-artifacts')
const PAGE_TIMEOUT_MS = 30_000

const cleanups: (() => Promise<unknown>)[] = []
let devnet: Devnet
let db: TestDatabase
let api: string
let browser: Browser
let emitter: Address
/** Every URL any page asked for, and every console error or uncaught exception. */
const requested: string[] = []
const consoleErrors: { page: string; text: string; url: string | undefined }[] = []
/** Codes of two agents: `busy` attributed on six transactions, `quiet` on three. */
const codes = { busy: '', quiet: '' }

function chromiumPath(): string {
  return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim()
}

/** Opens a page and waits until the network is quiet; a page holding the event stream open waits for `load` only. */
async function openPage(
  path: string,
  {
    waitUntil = 'networkidle0',
    answer,
  }: { waitUntil?: 'networkidle0' | 'load' /** A body to answer a URL with instead of the API. */; answer?: (url: URL) => unknown } = {},
): Promise<Page> {
  const page = await browser.newPage()
  page.setDefaultTimeout(PAGE_TIMEOUT_MS)
  await page.setViewport({ width: 1280, height: 900 })
  await page.setRequestInterception(true)
  page.on('request', (request) => {
    requested.push(request.url())
    const body = answer?.(new URL(request.url()))
    void (body === undefined
      ? request.continue()
      : request.respond({ status: 200, contentType: 'application/json', body: JSON.stringify(body) }))
  })
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push({ page: path, text: message.text(), url: message.location().url })
  })
  page.on('pageerror', (error) => consoleErrors.push({ page: path, text: String(error), url: undefined }))
  await page.goto(`${api}${path}`, { waitUntil })
  return page
}

const screenshot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}.png`), fullPage: true })
/** Sends one attributed Emitter call to the pool (not mined): the devnet serves its log as pre-confirmed. */
async function sendAttributed(from: number, code: string, seq: number): Promise<Hash> {
  const raw = await rawSignedTx(devnet.url, {
    from,
    to: emitter,
    data: encodeEmitMany(1, seq, '0x'),
    suffix: Attribution.toDataSuffix({ codes: [code] }),
    gas: 500_000n,
  })
  return fixtureClient(devnet.url).sendRawTransaction({ serializedTransaction: raw })
}

/** The live feed's row of a transaction as the page shows it, once `state` holds. */
async function feedRow(page: Page, hash: Hash, state: string) {
  const selector = `tr[data-tx="${hash}"]${state}`
  await page.waitForSelector(selector)
  return page.$eval(selector, (tr) => ({
    status: tr.getAttribute('data-status'),
    removed: tr.getAttribute('data-removed'),
    badge: tr.querySelector('.badge')?.textContent,
    struck: tr.querySelector('s') !== null && getComputedStyle(tr.querySelectorAll('td')[1]!).textDecorationLine === 'line-through',
  }))
}

const digits = (text: string) => Number(text.replace(/[^0-9]/g, ''))

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true })
  const bundle = mkdtempSync(join(tmpdir(), 'codetrail-dashboard-'))
  cleanups.push(async () => rmSync(bundle, { recursive: true, force: true }))
  const built = await runTs('scripts/build-web.ts', ['--outdir', bundle], {})
  expect(built.code, built.output).toBe(0)

  devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
  cleanups.push(() => devnet.stop())
  emitter = await deployOnDevnet(devnet, artifacts.Emitter)
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const port = await freePort()
  api = `http://127.0.0.1:${port}`
  const daemon = spawnTs('src/main.ts', [], {
    RPC_URL: devnet.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '200',
    PORT: String(port),
    DASHBOARD_DIR: bundle,
  })
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API')

  const client = createBuilderCodeClient(api)
  codes.busy = (await client.register(anvilAccount(1).address)).builderCode
  codes.quiet = (await client.register(anvilAccount(2).address)).builderCode
  const suffixes = [codes.busy, codes.busy, codes.quiet].map((code) => Attribution.toDataSuffix({ codes: [code] }))
  const { txHashes } = await buildChain(devnet.anvilUrl, {
    emitter,
    blocks: 3,
    txsPerBlock: 3,
    logsPerTx: 1,
    senders: [1, 2, 3],
    suffix: (i) => suffixes[i % 3],
  })
  await waitFor(async () => {
    const response = await fetch(`${api}/v1/attributions?limit=100`)
    return ((await response.json()) as { items: unknown[] }).items.length === txHashes.length
  }, 'the attributions')

  browser = await puppeteer.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--lang=en-US'] })
  cleanups.push(() => browser.close())
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('the dashboard', () => {
  it('overview: the indexer figures and a leaderboard whose rows equal the API stats of the same window, each code linking to its page', async () => {
    const page = await openPage('/')
    await page.waitForSelector('tr[data-code]')
    await page.waitForSelector('.chart canvas')
    const rows = await page.$$eval('tr[data-code]', (trs) =>
      trs.map((tr) => ({
        code: tr.getAttribute('data-code'),
        href: tr.querySelector('a')?.getAttribute('href'),
        attributions: tr.querySelector('[data-field=attributions]')?.textContent ?? '',
        pending: tr.querySelector('[data-field=pending]')?.textContent ?? '',
        distinctSenders: tr.querySelector('[data-field=distinctSenders]')?.textContent ?? '',
        gasUsed: tr.querySelector('[data-field=gasUsed]')?.getAttribute('title') ?? '',
      })),
    )
    expect(rows.map((row) => row.code)).toEqual([codes.busy, codes.quiet])
    const [since, until] = await page.$$eval('section[aria-labelledby=leaderboard-heading] .note time', (times) =>
      times.map((time) => time.getAttribute('datetime')),
    )
    for (const row of rows) {
      const response = await fetch(`${api}/v1/builder-codes/${row.code}/stats?interval=hour&since=${since}&until=${until}`)
      const { total } = (await response.json()) as {
        total: { attributions: number; pending: number; distinctSenders: number; gasUsed: string }
      }
      expect(total.attributions).toBeGreaterThan(0)
      expect({
        href: row.href,
        attributions: digits(row.attributions),
        pending: digits(row.pending),
        distinctSenders: digits(row.distinctSenders),
        gasUsed: digits(row.gasUsed),
      }).toEqual({
        href: `/codes/${row.code}`,
        attributions: total.attributions,
        pending: total.pending,
        distinctSenders: total.distinctSenders,
        gasUsed: Number(total.gasUsed),
      })
    }

    const status = (await (await fetch(`${api}/v1/status`)).json()) as {
      indexedBlock: number
      headBlock: number
      gasUsedMissing: number
      retention: { logsDays: number | null }
    }
    const figures = await page.$$eval('[data-testid=sync-figures] .figure', (divs) =>
      divs.map((div) => [div.querySelector('dt')?.textContent, div.querySelector('dd')?.textContent]),
    )
    expect(figures.map(([name]) => name)).toEqual([
      'Chain head',
      'Indexed head',
      'Finalized block',
      'Sync lag',
      'Pending logs',
      'Reorgs, last hour',
      'Gas used to fill',
      'Raw logs kept',
    ])
    expect(digits(figures[1]![1]!)).toBeGreaterThanOrEqual(status.indexedBlock - 1)
    expect(status.retention.logsDays).toBeNull()
    expect(figures[7]![1]).toContain('all history')
    await screenshot(page, 'overview')

    // Keyboard: the window choice is a radio group; arrow keys move it and the leaderboard follows.
    await page.focus('input[name=window][value="24h"]')
    await page.keyboard.press('ArrowRight')
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('input[name=window][value="7d"]')?.checked === true)
    await page.waitForSelector('tr[data-code]')

    await page.setViewport({ width: 390, height: 844 })
    await screenshot(page, 'overview-narrow')
    await page.click(`a[href="/codes/${codes.busy}"]`)
    await page.waitForSelector('h1 code')
    expect(await page.$eval('h1', (h1) => h1.textContent)).toContain(codes.busy)
    await page.close()
  })

  it('code page: wallet, totals, chart and recent transactions linked by hash', async () => {
    const page = await openPage(`/codes/${codes.busy}`)
    await page.waitForSelector('tbody a[href^="/v1/transactions/"]')
    await page.waitForSelector('.chart canvas')
    const wallet = await page.$eval('.figure dd .hex', (span) => span.getAttribute('title'))
    expect(wallet).toBe(anvilAccount(1).address.toLowerCase())
    expect(digits(await page.$eval('[data-field=attributions]', (dd) => dd.textContent ?? ''))).toBe(6)
    const links = await page.$$eval('tbody a[href^="/v1/transactions/"]', (as) => as.map((a) => a.getAttribute('href')))
    expect(links).toHaveLength(6)
    const detail = await fetch(`${api}${links[0]}`)
    expect(detail.status).toBe(200)
    await screenshot(page, 'code')
    await page.close()
  })

  it('register: the form shows the code for a wallet and the API error for a bad address', async () => {
    const page = await openPage('/register')
    const wallet = anvilAccount(7).address
    await page.type('#wallet', wallet)
    await page.keyboard.press('Enter')
    await page.waitForSelector('[data-testid=registration]')
    const shown = await page.$eval('[data-field=builderCode]', (strong) => strong.textContent)
    const expected = await createBuilderCodeClient(api).register(wallet)
    expect(shown).toBe(expected.builderCode)

    await page.$eval('#wallet', (input) => ((input as HTMLInputElement).value = ''))
    await page.type('#wallet', '0x1234')
    await page.click('button[type=submit]')
    await page.waitForSelector('[data-testid=registration-error]')
    const answer = await fetch(`${api}/v1/agents/builder-codes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ walletAddress: '0x1234' }),
    })
    const { error } = (await answer.json()) as { error: { code: string; message: string } }
    expect(error.code).toBe('invalid_wallet_address')
    expect(await page.$eval('[data-testid=registration-error]', (p) => p.textContent)).toBe(error.message)
    expect(await page.$eval('#wallet', (input) => input.getAttribute('aria-invalid'))).toBe('true')
    await screenshot(page, 'register')
    await page.close()
  })

  it('live feed: a transaction appears pending, turns confirmed, and is struck through when a reorg or a drop takes it back', async () => {
    const page = await openPage('/live', { waitUntil: 'load' })
    await page.waitForSelector('[data-connection=open]')
    const confirmedThenReorged = await sendAttributed(1, codes.busy, 100)
    expect(await feedRow(page, confirmedThenReorged, '[data-status=pending]')).toMatchObject({
      status: 'pending',
      removed: 'false',
      badge: 'pending',
    })
    await devnet.mine()
    expect(await feedRow(page, confirmedThenReorged, '[data-status=confirmed]')).toMatchObject({
      removed: 'false',
      badge: 'confirmed',
      struck: false,
    })

    const dropped = await sendAttributed(2, codes.quiet, 101)
    await feedRow(page, dropped, '[data-status=pending]')
    expect(await devnet.dropTransaction(dropped)).toBe(true)
    await devnet.reorg(1)
    expect(
      await fixtureClient(devnet.url)
        .getTransaction({ hash: confirmedThenReorged })
        .catch(() => null),
    ).toBeNull()
    // A drop shows once the next canonical block arrives without the transaction.
    await devnet.mine()
    expect(await feedRow(page, confirmedThenReorged, '[data-removed=true]')).toEqual({
      status: 'confirmed',
      removed: 'true',
      badge: 'removed: reorg',
      struck: true,
    })
    expect(await feedRow(page, dropped, '[data-removed=true]')).toEqual({
      status: 'pending',
      removed: 'true',
      badge: 'removed: dropped',
      struck: true,
    })
    await screenshot(page, 'live')
    await page.close()
  })

  it('chain switch: lists the chains of a deployment of two, and a pick sends its chainId on every read', async () => {
    const status = (await (await fetch(`${api}/v1/status`)).json()) as {
      chainId: number
      chains: { chainId: number; name: string | null }[]
    }
    expect(status.chains.map((chain) => chain.chainId)).toEqual([status.chainId])
    const other = { ...status.chains[0]!, chainId: 999_999, name: 'other' }
    // The deployment's status as if it indexed a second chain configured first (the default of an unnamed read).
    const page = await openPage('/', {
      answer: (url) =>
        url.pathname === '/v1/status' && !url.searchParams.has('chainId')
          ? { ...status, chainId: other.chainId, chains: [other, ...status.chains] }
          : undefined,
    })
    await page.waitForSelector('select[name=chain]')
    const options = await page.$$eval('select[name=chain] option', (list) => list.map((option) => [option.value, option.textContent]))
    expect(options).toEqual([
      ['all', 'All chains'],
      [String(other.chainId), `other (${other.chainId})`],
      [String(status.chainId), `${status.chains[0]!.name ?? `chain ${status.chainId}`} (${status.chainId})`],
    ])
    expect(await page.$eval('select[name=chain]', (select) => (select as HTMLSelectElement).value)).toBe(String(other.chainId))
    const asked = requested.length
    await page.select('select[name=chain]', String(status.chainId))
    await page.waitForSelector('tr[data-code]')
    await page.waitForNetworkIdle()
    const reads = requested
      .slice(asked)
      .map((url) => new URL(url))
      .filter((url) => url.pathname.startsWith('/v1/'))
    expect(reads.map((url) => url.pathname)).toEqual(expect.arrayContaining(['/v1/status', '/v1/leaderboard']))
    expect(reads.filter((url) => url.searchParams.get('chainId') !== String(status.chainId))).toEqual([])
    await page.close()
  })

  it('chain switch: "All chains" shows every chain’s figures and the leaderboard summed over them (chainId=all), the other reads unnamed', async () => {
    const status = (await (await fetch(`${api}/v1/status`)).json()) as {
      chainId: number
      chains: { chainId: number; name: string | null }[]
    }
    const other = { ...status.chains[0]!, chainId: 999_999, name: 'other' }
    const page = await openPage('/', {
      answer: (url) => (url.pathname === '/v1/status' ? { ...status, chains: [...status.chains, other] } : undefined),
    })
    await page.waitForSelector('select[name=chain]')
    expect(await page.$$eval('select[name=chain] option', (list) => list.map((option) => option.textContent))).toEqual([
      'All chains',
      `${status.chains[0]!.name ?? `chain ${status.chainId}`} (${status.chainId})`,
      `other (${other.chainId})`,
    ])
    const asked = requested.length
    await page.select('select[name=chain]', 'all')
    await page.waitForSelector('table[data-testid=chains] tr[data-chain]')
    await page.waitForSelector('tr[data-code]')
    await page.waitForNetworkIdle()
    expect(
      await page.$$eval('table[data-testid=chains] tr[data-chain]', (rows) => rows.map((row) => row.getAttribute('data-chain'))),
    ).toEqual([String(status.chainId), String(other.chainId)])
    expect(await page.$eval('#leaderboard-heading', (heading) => heading.textContent)).toBe('Leaderboard, all chains')
    const reads = requested
      .slice(asked)
      .map((url) => new URL(url))
      .filter((url) => url.pathname.startsWith('/v1/'))
    const summed = reads.filter((url) => url.pathname === '/v1/leaderboard' || url.pathname.endsWith('/stats'))
    expect(summed.map((url) => url.pathname)).toContain('/v1/leaderboard')
    expect(summed.filter((url) => url.searchParams.get('chainId') !== 'all')).toEqual([])
    expect(reads.filter((url) => !summed.includes(url) && url.searchParams.has('chainId'))).toEqual([])
    // The rows are the API's leaderboard across chains.
    const leaderboard = summed.find((url) => url.pathname === '/v1/leaderboard')!
    const expected = (await (await fetch(`${api}${leaderboard.pathname}${leaderboard.search}`)).json()) as {
      items: { builderCode: string; attributions: number }[]
    }
    // A deployment of one chain answers chainId=all as that chain.
    expect(expected).toEqual(
      await (await fetch(`${api}${leaderboard.pathname}${leaderboard.search.replace('chainId=all', `chainId=${status.chainId}`)}`)).json(),
    )
    const shown = await page.$$eval('tr[data-code]', (rows) =>
      rows.map((row) => [
        row.getAttribute('data-code'),
        Number(row.querySelector('[data-field=attributions]')!.textContent!.replace(/,/g, '')),
      ]),
    )
    expect(shown).toEqual(expected.items.map((item) => [item.builderCode, item.attributions]))
    await page.close()
  })

  it('asked no host but the API, and logged no console error but the browser’s note of the refused registration', () => {
    expect(requested.length).toBeGreaterThan(0)
    const hosts = new Set(requested.map((url) => new URL(url).hostname))
    expect([...hosts].filter((host) => host !== '127.0.0.1' && host !== 'localhost')).toEqual([])
    // Chromium logs every 4xx answer to fetch; the one the register test provoked on purpose is the only one.
    expect(consoleErrors).toEqual([
      { page: '/register', text: expect.stringContaining('status of 400'), url: `${api}/v1/agents/builder-codes` },
    ])
  })
})
