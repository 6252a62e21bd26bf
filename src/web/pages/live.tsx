import { useEffect, useState } from 'preact/hooks'
import { codePath, transactionPath, withChain, type Status } from '../api.js'
import { Hex, PageHeading, TableRegion, Time } from '../components/common.js'
import { formatInteger } from '../format.js'

const MAX_ROWS = 200
const STATUS_RANK: Record<Status, number> = { pending: 0, confirmed: 1, finalized: 2 }

/** The `data` of a stream message: one attribution as it is now. */
export type StreamAttribution = {
  txHash: string
  userOpHash: string | null
  builderCode: string
  role: string | null
  walletAddress: string | null
  sender: string
  blockNumber: number
  blockTimestamp: string
  blockTimestampMs?: number | null
  status: Status
  removed: boolean
  /** Why a removed attribution went, where the stream says. */
  reason?: 'reorg' | 'dropped'
}
/** One message of `GET /v1/stream`: the body webhooks receive. */
type StreamMessage = { id: string; type: `attribution.${Status | 'removed'}`; createdAt: string; data: StreamAttribution }

type Row = StreamAttribution & { key: string; receivedAt: string }
type Connection = 'connecting' | 'open' | 'reconnecting'

const rowKey = (data: StreamAttribution) => `${data.txHash}/${data.userOpHash ?? ''}/${data.builderCode}/${data.role ?? ''}`

/** Nothing announces why a row went; one removed before confirmation was dropped, after it, reorged out. */
export const removalReason = (row: Pick<StreamAttribution, 'status' | 'reason'>) =>
  row.reason ?? (row.status === 'pending' ? 'dropped' : 'reorg')

/** Applies one message: a new row goes on top, a known one takes the newer state. */
function applyMessage(rows: Row[], message: StreamMessage): Row[] {
  const key = rowKey(message.data)
  const existing = rows.find((row) => row.key === key)
  if (!existing) return [{ ...message.data, key, receivedAt: message.createdAt }, ...rows].slice(0, MAX_ROWS)
  // Events may arrive out of order after a reconnect; a row that came back after a reorg starts over.
  const newer = message.data.removed || existing.removed || STATUS_RANK[message.data.status] >= STATUS_RANK[existing.status]
  const next: Row = newer ? { ...existing, ...message.data } : existing
  return rows.map((row) => (row.key === key ? next : row))
}

export function LiveFeed() {
  const [rows, setRows] = useState<Row[]>([])
  const [connection, setConnection] = useState<Connection>('connecting')
  useEffect(() => {
    const source = new EventSource(withChain('/v1/stream'))
    source.onmessage = (event: MessageEvent<string>) => setRows((current) => applyMessage(current, JSON.parse(event.data) as StreamMessage))
    source.onopen = () => setConnection('open')
    // EventSource reconnects by itself, resuming after the last event id it saw.
    source.onerror = () => setConnection(source.readyState === EventSource.CLOSED ? 'connecting' : 'reconnecting')
    return () => source.close()
  }, [])
  return (
    <>
      <PageHeading>Live feed</PageHeading>
      <p class="note" role="status" data-connection={connection}>
        {connection === 'open'
          ? 'Connected: attributions appear as the indexer stores them.'
          : connection === 'connecting'
            ? 'Connecting…'
            : 'Connection lost; reconnecting…'}
      </p>
      <TableRegion label="Live attributions">
        <table class="feed">
          <caption class="visually-hidden">Attributions as they happen, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Builder code</th>
              <th scope="col">Transaction</th>
              <th scope="col">Sender</th>
              <th scope="col" class="number">
                Block
              </th>
              <th scope="col">Block time</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr
                key={row.key}
                data-tx={row.txHash}
                data-status={row.status}
                data-removed={String(row.removed)}
                class={row.removed ? 'removed' : undefined}
              >
                <td>
                  {row.removed ? (
                    <span class="badge removed" data-reason={removalReason(row)}>
                      removed: {removalReason(row)}
                    </span>
                  ) : (
                    <span class={`badge ${row.status}`}>{row.status}</span>
                  )}
                </td>
                <td>
                  <a href={codePath(row.builderCode)}>{row.builderCode}</a>
                  {row.role && <span class="muted"> · {row.role}</span>}
                </td>
                <td>
                  {row.removed ? (
                    <s>
                      <Hex value={row.userOpHash ?? row.txHash} />
                    </s>
                  ) : (
                    <a href={transactionPath(row.txHash)}>
                      <Hex value={row.userOpHash ?? row.txHash} />
                    </a>
                  )}
                </td>
                <td>
                  <Hex value={row.sender} />
                </td>
                <td class="number">{formatInteger(row.blockNumber)}</td>
                <td>
                  <Time iso={row.blockTimestamp} ms={row.blockTimestampMs} />
                </td>
              </tr>
            ))}
            {rows.length === 0 && (
              <tr>
                <td colSpan={6} class="muted">
                  Waiting for attributions…
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </TableRegion>
    </>
  )
}
