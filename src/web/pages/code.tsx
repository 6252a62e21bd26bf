import { useMemo } from 'preact/hooks'
import { answer, api, transactionPath } from '../api.js'
import { TimeChart } from '../components/chart.js'
import { ErrorNote, Hex, PageHeading, TableRegion, Time, useLoad } from '../components/common.js'
import { formatGas, formatInteger } from '../format.js'
import { removalReason } from './live.js'

const RECENT = 25
const REFRESH_MS = 10_000
const SPAN_MS = 7 * 24 * 3_600_000

export function CodePage({ code }: { code: string }) {
  const stats = useLoad(
    (signal) =>
      answer(
        api.GET('/v1/builder-codes/{code}/stats', {
          params: { path: { code }, query: { interval: 'hour', since: new Date(Date.now() - SPAN_MS).toISOString() } },
          signal,
        }),
      ),
    code,
    REFRESH_MS,
  )
  const recent = useLoad(
    (signal) =>
      answer(
        api.GET('/v1/attributions', { params: { query: { builderCode: code, includeRemoved: 'true', limit: String(RECENT) } }, signal }),
      ),
    code,
    REFRESH_MS,
  )
  const items = recent.data?.items ?? []
  const roles = [...new Set(items.map((item) => item.role).filter((role) => role != null))]
  const chart = useMemo(() => {
    const data = stats.data
    if (!data) return undefined
    return {
      times: data.buckets.map((bucket) => Date.parse(bucket.start) / 1000),
      series: [{ label: code, values: data.buckets.map((bucket) => bucket.attributions) }],
      description: `Attributed transactions per hour over the last 7 days: ${formatInteger(data.total.attributions)} in total.`,
    }
  }, [stats.data])
  const known = (value: string | null | undefined) => (value ? <Hex value={value} /> : <span class="muted">not known</span>)
  return (
    <>
      <PageHeading>
        Builder code <code>{code}</code>
      </PageHeading>
      <ErrorNote error={stats.error} />
      <section aria-labelledby="code-facts">
        <h2 id="code-facts" class="visually-hidden">
          Facts
        </h2>
        <dl class="figures">
          <div class="figure">
            <dt>Wallet</dt>
            <dd>{stats.data ? known(stats.data.walletAddress) : '–'}</dd>
          </div>
          <div class="figure">
            <dt>Owner (registry)</dt>
            <dd>{stats.data ? known(stats.data.registry?.owner ?? null) : '–'}</dd>
          </div>
          <div class="figure">
            <dt>Payout address (registry)</dt>
            <dd>{stats.data ? known(stats.data.registry?.payoutAddress ?? null) : '–'}</dd>
          </div>
          <div class="figure">
            <dt>Attributed txs, 7 d</dt>
            <dd data-field="attributions">{stats.data ? formatInteger(stats.data.total.attributions) : '–'}</dd>
          </div>
          <div class="figure">
            <dt>Distinct senders, 7 d</dt>
            <dd>{stats.data ? formatInteger(stats.data.total.distinctSenders) : '–'}</dd>
          </div>
          <div class="figure">
            <dt>Gas used, 7 d</dt>
            <dd>{stats.data ? formatGas(stats.data.total.gasUsed) : '–'}</dd>
          </div>
          {roles.length > 0 && (
            <div class="figure">
              <dt>Roles</dt>
              <dd>{roles.join(', ')}</dd>
            </div>
          )}
        </dl>
      </section>
      {chart && <TimeChart title="Attributed transactions per hour, last 7 days" {...chart} />}
      <section aria-labelledby="recent-heading">
        <h2 id="recent-heading">Recent transactions</h2>
        <ErrorNote error={recent.error} />
        <TableRegion label="Recent transactions">
          <table>
            <thead>
              <tr>
                <th scope="col">Transaction</th>
                {roles.length > 0 && <th scope="col">Role</th>}
                <th scope="col">Sender</th>
                <th scope="col" class="number">
                  Block
                </th>
                <th scope="col">Block time</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {items.map((item) => (
                <tr key={`${item.txHash}/${item.userOpHash ?? ''}/${item.role ?? ''}`} class={item.removed ? 'removed' : undefined}>
                  <td>
                    <a href={transactionPath(item.txHash)}>
                      <Hex value={item.userOpHash ?? item.txHash} />
                    </a>
                  </td>
                  {roles.length > 0 && <td>{item.role ?? '–'}</td>}
                  <td>
                    <Hex value={item.sender} />
                  </td>
                  <td class="number">{formatInteger(item.blockNumber)}</td>
                  <td>
                    <Time iso={item.blockTimestamp} ms={item.blockTimestampMs} />
                  </td>
                  <td>
                    {item.removed ? (
                      <span class="badge removed">removed: {removalReason(item)}</span>
                    ) : (
                      <span class={`badge ${item.status}`}>{item.status}</span>
                    )}
                  </td>
                </tr>
              ))}
              {recent.data && items.length === 0 && (
                <tr>
                  <td colSpan={roles.length > 0 ? 6 : 5} class="muted">
                    No transactions carry this code yet.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </TableRegion>
      </section>
    </>
  )
}
