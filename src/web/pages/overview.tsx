import { useMemo, useState } from 'preact/hooks'
import { answer, api, chainChoice, codePath, type Leaderboard, type RoleCounts } from '../api.js'
import { TimeChart } from '../components/chart.js'
import { ErrorNote, Hex, PageHeading, TableRegion, Time, useLoad } from '../components/common.js'
import { formatDecimal, formatDuration, formatGas, formatInteger } from '../format.js'

const STATUS_REFRESH_MS = 5_000
const LEADERBOARD_REFRESH_MS = 15_000
const CHART_CODES = 5
const HOUR_MS = 3_600_000

export const WINDOWS = {
  '24h': { label: '24 h', spanMs: 24 * HOUR_MS, interval: 'hour' },
  '7d': { label: '7 d', spanMs: 7 * 24 * HOUR_MS, interval: 'hour' },
  '30d': { label: '30 d', spanMs: 30 * 24 * HOUR_MS, interval: 'day' },
} as const
export type WindowKey = keyof typeof WINDOWS

export function Overview() {
  const [windowKey, setWindowKey] = useState<WindowKey>('24h')
  return (
    <>
      <PageHeading>Overview</PageHeading>
      {chainChoice() === 'all' ? <ChainsTable /> : <SyncFigures />}
      <section aria-labelledby="leaderboard-heading">
        <div class="section-head">
          <h2 id="leaderboard-heading">{chainChoice() === 'all' ? 'Leaderboard, all chains' : 'Leaderboard'}</h2>
          <fieldset class="segmented">
            <legend>Window</legend>
            {(Object.keys(WINDOWS) as WindowKey[]).map((key) => (
              <label key={key}>
                <input type="radio" name="window" value={key} checked={windowKey === key} onChange={() => setWindowKey(key)} />
                <span>{WINDOWS[key].label}</span>
              </label>
            ))}
          </fieldset>
        </div>
        <LeaderboardSection windowKey={windowKey} />
      </section>
    </>
  )
}

/** How far the read replica trails: milliseconds while that is the scale that matters. */
const replicaLag = (ms: number | null) =>
  ms == null ? undefined : ms < 120_000 ? `${formatInteger(ms)} ms behind` : `${formatDuration(ms / 1000)} behind`

/** With all chains picked: each chain's head, indexed head, finalized block and lag, as `/v1/status` lists them. */
function ChainsTable() {
  const { data: status, error } = useLoad((signal) => answer(api.GET('/v1/status', { signal })), 'chains-table', STATUS_REFRESH_MS)
  const block = (value: number | null | undefined) => (value == null ? '–' : formatInteger(value))
  return (
    <section aria-labelledby="sync-heading">
      <h2 id="sync-heading">Indexer, every chain</h2>
      <ErrorNote error={error} />
      <TableRegion label="Chains">
        <table class="chains" data-testid="chains">
          <caption class="visually-hidden">Each chain's head, indexed head, finalized block and lag</caption>
          <thead>
            <tr>
              <th scope="col">Chain</th>
              <th scope="col" class="number">
                Chain head
              </th>
              <th scope="col" class="number">
                Indexed head
              </th>
              <th scope="col" class="number">
                Finalized block
              </th>
              <th scope="col" class="number">
                Sync lag
              </th>
            </tr>
          </thead>
          <tbody>
            {(status?.chains ?? []).map((chain) => (
              <tr key={chain.chainId} data-chain={chain.chainId}>
                <th scope="row">
                  {chain.name ?? `chain ${chain.chainId}`} ({chain.chainId})
                </th>
                <td class="number">{block(chain.headBlock)}</td>
                <td class="number">{block(chain.indexedBlock)}</td>
                <td class="number">{block(chain.finalizedBlock)}</td>
                <td class="number">{chain.lagBlocks == null ? '–' : `${formatInteger(chain.lagBlocks)} blocks`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </section>
  )
}

function SyncFigures() {
  const { data: status, error } = useLoad((signal) => answer(api.GET('/v1/status', { signal })), 'status', STATUS_REFRESH_MS)
  const block = (value: number | null | undefined) => (value == null ? '–' : formatInteger(value))
  const figures: [string, string, string?][] = [
    ['Chain head', block(status?.headBlock)],
    ['Indexed head', block(status?.indexedBlock)],
    ['Finalized block', block(status?.finalizedBlock)],
    [
      'Sync lag',
      status?.lagBlocks == null ? '–' : `${formatInteger(status.lagBlocks)} ${status.lagBlocks === 1 ? 'block' : 'blocks'}`,
      status?.lagSeconds == null ? undefined : formatDuration(status.lagSeconds),
    ],
    status?.preconfirmations?.enabled === false || (status && status.pendingLogsPerSecond === null)
      ? [
          'Pending logs',
          'no pre-confirmations on this chain',
          status.blockTimeMs == null ? undefined : `a block every ${formatInteger(status.blockTimeMs)} ms`,
        ]
      : ['Pending logs', status?.pendingLogsPerSecond != null ? `${formatDecimal(status.pendingLogsPerSecond)} /s` : '–'],
    ['Reorgs, last hour', status ? formatInteger(status.reorgsLastHour) : '–'],
    [
      'Gas used to fill',
      status ? formatInteger(status.gasUsedMissing) : '–',
      status && status.gasUsedMissing > 0 ? 'attributed transactions whose receipts follow their ranges' : undefined,
    ],
    [
      'Raw logs kept',
      status ? (status.retention.logsDays === null ? 'all history' : `${formatInteger(status.retention.logsDays)} days`) : '–',
      status?.retention.logsSince ? `since ${status.retention.logsSince.slice(0, 10)}` : undefined,
    ],
    ...(status?.readReplica
      ? [['Read replica', status.readReplica.state, replicaLag(status.readReplica.lagMs)] as [string, string, string?]]
      : []),
  ]
  return (
    <section aria-labelledby="sync-heading">
      <h2 id="sync-heading">Indexer</h2>
      <ErrorNote error={error} />
      <dl class="figures" data-testid="sync-figures">
        {figures.map(([name, value, detail]) => (
          <div class="figure" key={name}>
            <dt>{name}</dt>
            <dd>
              {value}
              {detail !== undefined && <span class="detail"> · {detail}</span>}
            </dd>
          </div>
        ))}
      </dl>
      {status?.indexedAt && (
        <p class="note">
          Indexed block time <Time iso={status.indexedAt} />
        </p>
      )}
    </section>
  )
}

function LeaderboardSection({ windowKey }: { windowKey: WindowKey }) {
  const choice = WINDOWS[windowKey]
  const { data, error, loading } = useLoad(
    (signal) =>
      answer(api.GET('/v1/leaderboard', { params: { query: { since: new Date(Date.now() - choice.spanMs).toISOString() } }, signal })),
    windowKey,
    LEADERBOARD_REFRESH_MS,
  )
  const items = data?.items ?? []
  const hasRoles = items.some((item) => item.roles.some((counts) => counts.role !== null))
  return (
    <>
      <ErrorNote error={error} />
      {data && (
        <p class="note">
          From <Time iso={data.since} /> to <Time iso={data.until} />; transactions and user operations not removed.
        </p>
      )}
      <TableRegion label={`Leaderboard, ${choice.label}`}>
        <table class="leaderboard" aria-busy={loading}>
          <caption class="visually-hidden">Builder codes by attributed transactions, {choice.label}</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Builder code</th>
              {hasRoles && <th scope="col">By role</th>}
              <th scope="col">Wallet</th>
              <th scope="col" class="number">
                Attributed txs
              </th>
              <th scope="col" class="number">
                Pending
              </th>
              <th scope="col" class="number">
                Distinct senders
              </th>
              <th scope="col" class="number">
                Gas used
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((item, i) => (
              <tr key={item.builderCode} data-code={item.builderCode}>
                <td>{formatInteger(i + 1)}</td>
                <th scope="row">
                  <a href={codePath(item.builderCode)}>{item.builderCode}</a>
                </th>
                {hasRoles && <td data-field="roles">{formatRoles(item.roles)}</td>}
                <td>{item.walletAddress ? <Hex value={item.walletAddress} /> : <span class="muted">not registered here</span>}</td>
                <td class="number" data-field="attributions">
                  {formatInteger(item.attributions)}
                </td>
                <td class="number" data-field="pending">
                  {formatInteger(item.pending)}
                </td>
                <td class="number" data-field="distinctSenders">
                  {formatInteger(item.distinctSenders)}
                </td>
                <td class="number" data-field="gasUsed" title={`${formatInteger(BigInt(item.gasUsed))} gas`}>
                  {formatGas(item.gasUsed)}
                </td>
              </tr>
            ))}
            {data && items.length === 0 && (
              <tr>
                <td colSpan={hasRoles ? 8 : 7} class="muted">
                  No attributed transactions in this window yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </TableRegion>
      {data && items.length > 0 && <TopCodesChart leaderboard={data} interval={choice.interval} label={choice.label} />}
    </>
  )
}

function TopCodesChart({ leaderboard, interval, label }: { leaderboard: Leaderboard; interval: 'hour' | 'day'; label: string }) {
  const codes = [...new Set(leaderboard.items.map((item) => item.builderCode))].slice(0, CHART_CODES)
  const key = `${interval}:${leaderboard.since}:${leaderboard.until}:${codes.join(',')}`
  const { data, error } = useLoad(
    (signal) =>
      Promise.all(
        codes.map((code) =>
          answer(
            api.GET('/v1/builder-codes/{code}/stats', {
              params: { path: { code }, query: { interval, since: leaderboard.since, until: leaderboard.until } },
              signal,
            }),
          ),
        ),
      ),
    key,
  )
  const chart = useMemo(() => {
    if (!data || data.length === 0) return undefined
    const times = data[0]!.buckets.map((bucket) => Date.parse(bucket.start) / 1000)
    const series = data.map((stats) => ({ label: stats.builderCode, values: stats.buckets.map((bucket) => bucket.attributions) }))
    const description = `Attributed transactions per ${interval}, ${label}: ${data
      .map((stats) => `${stats.builderCode} ${formatInteger(stats.total.attributions)} in total`)
      .join(', ')}.`
    return { times, series, description }
  }, [data])
  return (
    <>
      <ErrorNote error={error} />
      {chart && <TimeChart title={`Attributed transactions per ${interval}, top ${codes.length} codes`} {...chart} />}
    </>
  )
}

/** A code's attributions per role, e.g. "app 3 · wallet 2"; codes of schemas 0 and 1 have no role. */
function formatRoles(roles: readonly RoleCounts[]): string {
  return roles.map((counts) => `${counts.role ?? 'no role'} ${formatInteger(counts.attributions)}`).join(' · ') || '–'
}
