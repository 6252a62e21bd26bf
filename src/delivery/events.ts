import type { WebhookEvent, WebhookSubscription } from '../store/index.js'

/** The JSON body of a webhook delivery and of a stream message: one shape, so a receiver reads both alike. */
export type EventPayload = {
  id: string
  type: WebhookEvent['type']
  createdAt: string
  data: {
    chainId: number
    txHash: string
    userOpHash: string | null
    builderCode: string
    role: string | null
    walletAddress: string | null
    sender: string
    blockNumber: number
    blockTimestamp: string
    blockTimestampMs: number | null
    status: WebhookEvent['status']
    removed: boolean
  }
}

export function toPayload(event: WebhookEvent): EventPayload {
  return {
    id: String(event.id),
    type: event.type,
    createdAt: event.createdAt.toISOString(),
    data: {
      chainId: event.chainId,
      txHash: event.txHash,
      userOpHash: event.userOpHash === '' ? null : event.userOpHash,
      builderCode: event.builderCode,
      role: event.role,
      walletAddress: event.walletAddress,
      sender: event.sender,
      blockNumber: event.blockNumber,
      blockTimestamp: event.blockTimestamp.toISOString(),
      blockTimestampMs: event.blockTimestampMs,
      status: event.status,
      removed: event.removed,
    },
  }
}

type Filters = Pick<WebhookSubscription, 'events' | 'builderCodes' | 'walletAddresses' | 'roles'> &
  Partial<Pick<WebhookSubscription, 'chainIds'>>

/** Whether a subscription wants the event: its type, and each filter it sets (null matches all). */
export function matchesSubscription(
  subscription: Filters,
  event: Pick<WebhookEvent, 'type' | 'builderCode' | 'walletAddress' | 'role' | 'chainId'>,
): boolean {
  const { events, builderCodes, walletAddresses, roles, chainIds = null } = subscription
  return (
    events.includes(event.type) &&
    (chainIds === null || chainIds.includes(event.chainId)) &&
    (builderCodes === null || builderCodes.includes(event.builderCode)) &&
    (walletAddresses === null || (event.walletAddress !== null && walletAddresses.includes(event.walletAddress))) &&
    (roles === null || (event.role !== null && roles.includes(event.role)))
  )
}
