import type pg from 'pg'
import { withTransaction, type Queryable } from './client.js'
import { dropExpiredMonths, type ExpiryRules } from './partitions.js'
import type { Status, WebhookEventType } from './schema.js'

/** Serialises publishers (a lease hand-over may briefly run two), so event ids become visible in order. */
const PUBLISH_LOCK_KEY = 0x77686b31
/** Notified with the newest event id each time events are published. */
export const EVENTS_CHANNEL = 'codetrail_webhook_events'
/** Notified (on commit) by the outbox trigger when a transaction recorded attribution changes. */
export const CHANGES_CHANNEL = 'codetrail_attribution_changes'
const DISPATCH_CURSOR = 'dispatch'

/** A published event: the state an attribution reached, as receivers get it. */
export type WebhookEvent = {
  id: number
  type: WebhookEventType
  createdAt: Date
  chainId: number
  txHash: string
  userOpHash: string
  builderCode: string
  role: string | null
  walletAddress: string | null
  sender: string
  blockNumber: number
  blockTimestamp: Date
  /** The node's milliseconds for the block; null where it served none. */
  blockTimestampMs: number | null
  status: Status
  removed: boolean
}

const EVENT_COLUMNS = `id, type, created_at AS "createdAt", chain_id AS "chainId", tx_hash AS "txHash", user_op_hash AS "userOpHash",
  builder_code AS "builderCode", role, wallet_address AS "walletAddress", sender, block_number AS "blockNumber",
  block_timestamp AS "blockTimestamp", block_timestamp_ms AS "blockTimestampMs", status, removed`

/**
 * Moves committed outbox changes into `webhook_events`, oldest first, giving them their event ids: the
 * writing transactions of the first `limit` changes, whole. Per transaction an attribution publishes only
 * its final state (a tip write marks a pending row removed, then confirms it: one `confirmed`), and only
 * when it differs from the state last announced; a removal only retracts an announced state. Returns the
 * newest id published and whether the batch was full (more may wait).
 */
export async function publishChanges(pool: pg.Pool, limit: number): Promise<{ published: number; lastId: number | null; more: boolean }> {
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [PUBLISH_LOCK_KEY])
    const { rows } = await client.query<{ taken: number; published: number; lastId: number | null }>(
      `WITH head AS (
         SELECT xact_id, size FROM (SELECT xact_id, size, sum(size) OVER (ORDER BY id) - size AS before FROM attribution_change_sets) s WHERE before < $1
       ),
       moved_sets AS (DELETE FROM attribution_change_sets c WHERE c.xact_id IN (SELECT xact_id FROM head) RETURNING c.id, c.xact_id, c.changes, c.created_at),
       moved AS (
         SELECT row_number() OVER (ORDER BY m.id, u.position) AS id, m.xact_id, m.created_at, u.*
         FROM moved_sets m CROSS JOIN LATERAL unnest(m.changes) WITH ORDINALITY AS u(type, chain_id, tx_hash, user_op_hash, builder_code, role, sender,
           block_number, block_timestamp, block_timestamp_ms, status, removed, position)
       ),
       net AS (
         SELECT DISTINCT ON (xact_id, chain_id, tx_hash, user_op_hash, builder_code, role) * FROM moved
         ORDER BY xact_id, chain_id, tx_hash, user_op_hash, builder_code, role, id DESC
       ),
       sequenced AS (
         SELECT n.*, lag(n.type) OVER (PARTITION BY chain_id, tx_hash, user_op_hash, builder_code, role ORDER BY id) AS earlier FROM net n
       ),
       published AS (
         INSERT INTO webhook_events (type, chain_id, tx_hash, user_op_hash, builder_code, role, wallet_address, sender, block_number,
           block_timestamp, block_timestamp_ms, status, removed, created_at)
         SELECT m.type, m.chain_id, m.tx_hash, m.user_op_hash, m.builder_code, m.role, bc.wallet_address, m.sender, m.block_number,
           m.block_timestamp, m.block_timestamp_ms, m.status, m.removed, m.created_at
         FROM sequenced m
           CROSS JOIN LATERAL (SELECT COALESCE(m.earlier, (
             SELECT e.type FROM webhook_events e
             WHERE (e.chain_id, e.tx_hash, e.user_op_hash, e.builder_code) = (m.chain_id, m.tx_hash, m.user_op_hash, m.builder_code)
               AND e.role IS NOT DISTINCT FROM m.role
             ORDER BY e.id DESC LIMIT 1)) AS announced) a
           LEFT JOIN builder_codes bc ON bc.chain_id = m.chain_id AND bc.builder_code = m.builder_code
         WHERE a.announced IS DISTINCT FROM m.type AND (m.type <> 'attribution.removed' OR a.announced IS NOT NULL)
         ORDER BY m.id
         RETURNING id
       )
       SELECT (SELECT coalesce(sum(size), 0)::int FROM head) AS taken, (SELECT count(*)::int FROM published) AS published, (SELECT max(id) FROM published) AS "lastId"`,
      [limit],
    )
    const { taken, published, lastId } = rows[0]!
    if (lastId !== null) await client.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, String(lastId)])
    return { published, lastId, more: taken >= limit }
  })
}

/** Filters of the event stream; each one given narrows it. */
export type EventFilter = {
  builderCodes?: readonly string[]
  walletAddresses?: readonly string[]
  types?: readonly string[]
  chainIds?: readonly number[]
}

/** Published events after `after` (and at most `upTo`), in id order, at most `limit`. */
export async function readEvents(
  db: Queryable,
  { after, upTo, limit, filter = {} }: { after: number; upTo?: number; limit: number; filter?: EventFilter },
): Promise<WebhookEvent[]> {
  const { rows } = await db.query<WebhookEvent>(
    `SELECT ${EVENT_COLUMNS} FROM webhook_events
     WHERE id > $1 AND ($6::bigint IS NULL OR id <= $6) AND ($3::text[] IS NULL OR builder_code = ANY($3)) AND ($4::text[] IS NULL OR wallet_address = ANY($4))
       AND ($5::text[] IS NULL OR type = ANY($5)) AND ($7::int[] IS NULL OR chain_id = ANY($7))
     ORDER BY id LIMIT $2`,
    [
      after,
      limit,
      filter.builderCodes ?? null,
      filter.walletAddresses ?? null,
      filter.types ?? null,
      upTo ?? null,
      filter.chainIds ?? null,
    ],
  )
  return rows
}

/** The newest published event id (0 when none). */
export async function latestEventId(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ id: number | null }>('SELECT max(id) AS id FROM webhook_events')
  return rows[0]?.id ?? 0
}

export async function getDispatchCursor(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ eventId: number }>(`SELECT event_id AS "eventId" FROM webhook_cursor WHERE name = $1`, [
    DISPATCH_CURSOR,
  ])
  return rows[0]?.eventId ?? 0
}

/** The dispatch cursor, locked until the transaction ends: a second dispatcher (a lease hand-over) waits instead of owing the same events again. */
export async function lockDispatchCursor(client: pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ eventId: number }>(`SELECT event_id AS "eventId" FROM webhook_cursor WHERE name = $1 FOR UPDATE`, [
    DISPATCH_CURSOR,
  ])
  return rows[0]?.eventId ?? 0
}

export async function setDispatchCursor(db: Queryable, eventId: number): Promise<void> {
  await db.query(`UPDATE webhook_cursor SET event_id = greatest(event_id, $2) WHERE name = $1`, [DISPATCH_CURSOR, eventId])
}

export type WebhookSubscription = {
  id: string
  url: string
  secret: string
  events: string[]
  builderCodes: string[] | null
  walletAddresses: string[] | null
  roles: string[] | null
  chainIds: number[] | null
  createdAt: Date
  consecutiveFailures: number
  retryAt: Date | null
  disabledAt: Date | null
  disabledReason: string | null
  /** The secret a rotation replaced (as stored), while it still signs. */
  previousSecret: string | null
}

const SUBSCRIPTION_COLUMNS = `id, url, secret, events, builder_codes AS "builderCodes", wallet_addresses AS "walletAddresses", roles, chain_ids AS "chainIds",
  created_at AS "createdAt", consecutive_failures AS "consecutiveFailures", retry_at AS "retryAt", disabled_at AS "disabledAt",
  disabled_reason AS "disabledReason", CASE WHEN previous_secret_until > now() THEN previous_secret END AS "previousSecret"`

export type NewWebhookSubscription = Pick<
  WebhookSubscription,
  'id' | 'url' | 'secret' | 'events' | 'builderCodes' | 'walletAddresses' | 'roles'
> &
  Partial<Pick<WebhookSubscription, 'chainIds'>>

/** Replaces the secret (as stored); the old one signs beside it for `overlapMs`. Returns until when; null when there is no such subscription. */
export async function rotateSecret(db: Queryable, id: string, secret: string, overlapMs: number): Promise<Date | null> {
  const { rows } = await db.query<{ until: Date }>(
    `UPDATE webhook_subscriptions SET previous_secret = secret, previous_secret_until = now() + make_interval(secs => $3 / 1000.0), secret = $2
     WHERE id = $1 RETURNING previous_secret_until AS until`,
    [id, secret, overlapMs],
  )
  return rows[0]?.until ?? null
}

export async function insertSubscription(db: Queryable, s: NewWebhookSubscription): Promise<WebhookSubscription> {
  const { rows } = await db.query<WebhookSubscription>(
    `INSERT INTO webhook_subscriptions (id, url, secret, events, builder_codes, wallet_addresses, roles, chain_ids) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING ${SUBSCRIPTION_COLUMNS}`,
    [s.id, s.url, s.secret, s.events, s.builderCodes, s.walletAddresses, s.roles, s.chainIds ?? null],
  )
  return rows[0]!
}

export async function listSubscriptions(db: Queryable, { activeOnly = false } = {}): Promise<WebhookSubscription[]> {
  const { rows } = await db.query<WebhookSubscription>(
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions ${activeOnly ? 'WHERE disabled_at IS NULL' : ''} ORDER BY created_at, id`,
  )
  return rows
}

export async function getSubscription(db: Queryable, id: string): Promise<WebhookSubscription | null> {
  const { rows } = await db.query<WebhookSubscription>(`SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE id = $1`, [id])
  return rows[0] ?? null
}

/** Deletes a subscription with its deliveries; false when there was none. */
export async function deleteSubscription(db: Queryable, id: string): Promise<boolean> {
  const result = await db.query('DELETE FROM webhook_subscriptions WHERE id = $1', [id])
  return (result.rowCount ?? 0) > 0
}

/** Enabled again with a clean failure count (a redelivery asked by its owner). */
export async function enableSubscription(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE webhook_subscriptions SET disabled_at = NULL, disabled_reason = NULL, consecutive_failures = 0, retry_at = NULL WHERE id = $1`,
    [id],
  )
}

export type Outstanding = { subscriptionId: string; eventId: number; txHash: string }

/** Records events owed to subscriptions (again: a repeat changes nothing). */
export async function addOutstanding(db: Queryable, rows: readonly Outstanding[]): Promise<void> {
  if (rows.length === 0) return
  await db.query(
    `INSERT INTO webhook_outstanding (subscription_id, event_id, tx_hash)
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT DO NOTHING`,
    [rows.map((r) => r.subscriptionId), rows.map((r) => r.eventId), rows.map((r) => r.txHash)],
  )
}

/** `row_to_json` gives timestamps as strings. */
function reviveDates<T extends object>(row: T, keys: (keyof T)[]): T {
  for (const key of keys) if (typeof row[key] === 'string') (row as Record<keyof T, unknown>)[key] = new Date(row[key] as string)
  return row
}

export type DrainClaim =
  | { state: 'claimed'; subscription: WebhookSubscription }
  | { state: 'busy' | 'gone' | 'disabled' }
  | { state: 'backoff'; retryAt: Date; consecutiveFailures: number }

/**
 * Takes the subscription's drain lease for `leaseMs` when it is free (or lapsed), the subscription is
 * enabled and its backoff is over; otherwise says why not.
 */
export async function claimDrain(db: Queryable, subscriptionId: string, leaseMs: number): Promise<DrainClaim> {
  const { rows } = await db.query<{ subscription: WebhookSubscription | null; state: WebhookSubscription | null }>(
    `WITH claimed AS (
       UPDATE webhook_subscriptions SET drain_until = now() + make_interval(secs => $2 / 1000.0)
       WHERE id = $1 AND disabled_at IS NULL AND (drain_until IS NULL OR drain_until < now()) AND (retry_at IS NULL OR retry_at <= now())
       RETURNING ${SUBSCRIPTION_COLUMNS}
     )
     SELECT (SELECT row_to_json(c) FROM claimed c) AS subscription,
       (SELECT row_to_json(s) FROM (SELECT ${SUBSCRIPTION_COLUMNS}, drain_until > now() AS busy FROM webhook_subscriptions WHERE id = $1) s) AS state`,
    [subscriptionId, leaseMs],
  )
  const { subscription, state } = rows[0]!
  const dates: (keyof WebhookSubscription)[] = ['createdAt', 'retryAt', 'disabledAt']
  if (subscription) return { state: 'claimed', subscription: reviveDates(subscription, dates) }
  if (!state) return { state: 'gone' }
  const current = reviveDates(state, dates) as WebhookSubscription & { busy: boolean | null }
  if (current.disabledAt) return { state: 'disabled' }
  if (current.busy) return { state: 'busy' }
  return { state: 'backoff', retryAt: current.retryAt ?? new Date(), consecutiveFailures: current.consecutiveFailures }
}

/** Extends a held drain lease. */
export async function renewDrain(db: Queryable, subscriptionId: string, leaseMs: number): Promise<void> {
  await db.query(`UPDATE webhook_subscriptions SET drain_until = now() + make_interval(secs => $2 / 1000.0) WHERE id = $1`, [
    subscriptionId,
    leaseMs,
  ])
}

export async function releaseDrain(db: Queryable, subscriptionId: string): Promise<void> {
  await db.query(`UPDATE webhook_subscriptions SET drain_until = NULL WHERE id = $1`, [subscriptionId])
}

/** The oldest events owed to a subscription, at most `limit`. */
export async function owedEvents(db: Queryable, subscriptionId: string, limit: number): Promise<WebhookEvent[]> {
  const { rows } = await db.query<WebhookEvent>(
    `SELECT ${EVENT_COLUMNS} FROM webhook_events WHERE id IN (
       SELECT event_id FROM webhook_outstanding WHERE subscription_id = $1 ORDER BY event_id LIMIT $2)
     ORDER BY id`,
    [subscriptionId, limit],
  )
  return rows
}

/** Whether anything is owed to the subscription. */
export async function isOwed(db: Queryable, subscriptionId: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM webhook_outstanding WHERE subscription_id = $1 LIMIT 1', [subscriptionId])
  return rows.length > 0
}

/** Enabled subscriptions that are owed events and that no live drain holds: the reconciler queues a drain for each. */
export async function undrainedSubscriptions(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM webhook_subscriptions s
     WHERE disabled_at IS NULL AND (drain_until IS NULL OR drain_until < now())
       AND EXISTS (SELECT 1 FROM webhook_outstanding o WHERE o.subscription_id = s.id)`,
  )
  return rows.map((row) => row.id)
}

export type DeliveryAttempt = {
  subscriptionId: string
  eventId: number
  ok: boolean
  httpStatus: number | null
  error: string | null
  durationMs: number
}

/**
 * Records a drain round's attempts in one statement: each attempt, the delivered events no longer owed,
 * and, when one succeeded, the subscription healthy again. Returns whether it was failing.
 */
export async function recordAttempts(db: Queryable, attempts: readonly DeliveryAttempt[]): Promise<{ recovered: boolean }> {
  if (attempts.length === 0) return { recovered: false }
  const subscriptionId = attempts[0]!.subscriptionId
  const { rows } = await db.query(
    `WITH attempt AS (
       INSERT INTO webhook_deliveries (subscription_id, event_id, ok, http_status, error, duration_ms)
       SELECT $1, * FROM unnest($2::bigint[], $3::boolean[], $4::int[], $5::text[], $6::int[])
     ),
     delivered AS (
       DELETE FROM webhook_outstanding WHERE subscription_id = $1 AND event_id IN (SELECT e FROM unnest($2::bigint[], $3::boolean[]) AS d(e, ok) WHERE ok)
     )
     UPDATE webhook_subscriptions SET consecutive_failures = 0, retry_at = NULL
     WHERE id = $1 AND consecutive_failures > 0 AND true = ANY($3::boolean[]) RETURNING id`,
    [
      subscriptionId,
      attempts.map((a) => a.eventId),
      attempts.map((a) => a.ok),
      attempts.map((a) => a.httpStatus),
      attempts.map((a) => a.error),
      attempts.map((a) => a.durationMs),
    ],
  )
  return { recovered: rows.length > 0 }
}

/**
 * Counts one more consecutive failure of a drain round and sets the next try `backoffMs` away. At
 * `maxFailures` the subscription is disabled with the reason, and nothing is owed to it any more (a
 * redeliver owes it again).
 */
export async function recordFailure(
  pool: pg.Pool,
  subscriptionId: string,
  lastError: string,
  { backoffMs, maxFailures }: { backoffMs: (failures: number) => number; maxFailures: number },
): Promise<{ retryAt: Date | null; disabled: boolean }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ failures: number }>(
      `UPDATE webhook_subscriptions SET consecutive_failures = consecutive_failures + 1 WHERE id = $1 AND disabled_at IS NULL
       RETURNING consecutive_failures AS failures`,
      [subscriptionId],
    )
    const failures = rows[0]?.failures
    if (failures === undefined) return { retryAt: null, disabled: true }
    if (failures >= maxFailures) {
      const reason = `${failures} consecutive failed deliveries; last: ${lastError}`
      await client.query(`UPDATE webhook_subscriptions SET retry_at = NULL, disabled_at = now(), disabled_reason = $2 WHERE id = $1`, [
        subscriptionId,
        reason,
      ])
      await client.query('DELETE FROM webhook_outstanding WHERE subscription_id = $1', [subscriptionId])
      return { retryAt: null, disabled: true }
    }
    const retryAt = new Date(Date.now() + backoffMs(failures))
    await client.query(`UPDATE webhook_subscriptions SET retry_at = $2 WHERE id = $1`, [subscriptionId, retryAt])
    return { retryAt, disabled: false }
  })
}

export type DeliveryRecord = Omit<DeliveryAttempt, 'subscriptionId'> & { id: number; createdAt: Date }

/** The subscription's latest delivery attempts, newest first. */
export async function listDeliveries(db: Queryable, subscriptionId: string, limit: number): Promise<DeliveryRecord[]> {
  const { rows } = await db.query<DeliveryRecord>(
    `SELECT id, event_id AS "eventId", ok, http_status AS "httpStatus", error, duration_ms AS "durationMs", created_at AS "createdAt"
     FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY id DESC LIMIT $2`,
    [subscriptionId, limit],
  )
  return rows
}

/** Says that a stream reader may come back for events until `untilMs` from now: the outbox records every type until then. */
export async function markStreamDemand(db: Queryable, untilMs: number): Promise<void> {
  await db.query(
    `INSERT INTO outbox_demand (name, until) VALUES ('stream', now() + make_interval(secs => $1 / 1000.0))
     ON CONFLICT (name) DO UPDATE SET until = greatest(outbox_demand.until, EXCLUDED.until)`,
    [untilMs],
  )
}

/** Whether event `e` has been handed out by the dispatcher (its id at or before the dispatch cursor). */
const HANDED_OUT = (e: string) => `${e}.id <= (SELECT event_id FROM webhook_cursor WHERE name = '${DISPATCH_CURSOR}')`
/** Whether event `e` is still owed to an enabled subscription (one disabled is owed nothing it can be sent). */
const OWED_TO_ENABLED = (e: string) =>
  `EXISTS (SELECT 1 FROM webhook_outstanding o JOIN webhook_subscriptions s ON s.id = o.subscription_id WHERE o.event_id = ${e}.id AND s.disabled_at IS NULL)`

/**
 * A month partition of `webhook_events` may be dropped once every event of it is handed out; those
 * still owed to an enabled subscription (a receiver down for longer than the retention) move into
 * `webhook_events_default`. See dropExpiredMonths.
 */
const EVENT_MONTH_EXPIRY: ExpiryRules = {
  check: (p) => `SELECT count(*) AS rows, count(*) FILTER (WHERE (${HANDED_OUT('e')}) IS NOT TRUE) AS open FROM ${p} e`,
  kept: (p) => `SELECT e.* FROM ${p} e WHERE ${OWED_TO_ENABLED('e')}`,
}
/** A month partition of `webhook_deliveries` (the record of attempts) may be dropped whatever it holds. */
const DELIVERY_MONTH_EXPIRY: ExpiryRules = { check: (p) => `SELECT count(*) AS rows, 0 AS open FROM ${p}` }

/** Runs `statement` (a DELETE of at most `batch` rows, its last parameter) until it deletes fewer; returns the rows deleted. */
async function deleteInBatches(pool: pg.Pool, statement: string, parameters: unknown[], batch: number): Promise<number> {
  let deleted = 0
  for (;;) {
    const { rowCount } = await pool.query(statement, [...parameters, batch])
    deleted += rowCount ?? 0
    if ((rowCount ?? 0) < batch) return deleted
  }
}

/**
 * Lets go of the events older than `retentionDays` that the dispatcher has handed out and no enabled
 * subscription is still owed, and of the delivery records older than that. First whole month partitions
 * go (of `webhook_events`, the few events still owed moved into `webhook_events_default`, `moved`; see
 * EVENT_MONTH_EXPIRY), then the rest is deleted, `batch` rows per statement. `events` and `deliveries`
 * count the rows of dropped partitions too.
 */
export async function pruneWebhookHistory(
  pool: pg.Pool,
  retentionDays: number,
  batch: number,
): Promise<{ events: number; deliveries: number; partitions: string[]; moved: number }> {
  // The database's clock, as `created_at` is.
  const { rows } = await pool.query<{ cutoff: Date }>('SELECT now() - make_interval(days => $1) AS cutoff', [retentionDays])
  const cutoff = rows[0]!.cutoff
  const droppedEvents = await dropExpiredMonths(pool, 'webhook_events', cutoff, EVENT_MONTH_EXPIRY)
  const droppedDeliveries = await dropExpiredMonths(pool, 'webhook_deliveries', cutoff, DELIVERY_MONTH_EXPIRY)
  const events = await deleteInBatches(
    pool,
    `DELETE FROM webhook_events WHERE id IN (
       SELECT id FROM webhook_events e WHERE created_at < $1 AND ${HANDED_OUT('e')} AND NOT ${OWED_TO_ENABLED('e')} LIMIT $2)`,
    [cutoff],
    batch,
  )
  const deliveries = await deleteInBatches(
    pool,
    `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < $1 LIMIT $2)`,
    [cutoff],
    batch,
  )
  return {
    events: droppedEvents.rows + events,
    deliveries: droppedDeliveries.rows + deliveries,
    partitions: [...droppedEvents.partitions, ...droppedDeliveries.partitions],
    moved: droppedEvents.moved,
  }
}
