import type pg from 'pg'
import { CodetrailError } from '../internal/errors.js'

/** A write refused because another leader claimed the lease's generation after this one. */
export class LeaseFencedError extends CodetrailError {
  constructor(
    /** The chain whose scheduler lease it is; null for the delivery lease, which no chain owns. */
    readonly chainId: number | null,
    readonly generation: number,
    readonly current: number,
  ) {
    super(
      chainId === null
        ? `delivery lease generation ${generation} is stale (now ${current}): write refused`
        : `scheduler lease generation ${generation} of chain ${chainId} is stale (now ${current}): write refused`,
    )
    this.name = 'LeaseFencedError'
  }
}

/** Checks, inside a caller's transaction, that its writer still holds the newest lease generation. */
export type Fence = (client: pg.PoolClient, mode?: 'share' | 'update') => Promise<void>

/** Where a lease's generation lives: the statement that claims the next one and the one that reads it. */
type GenerationRow = {
  chainId: number | null
  claim: { text: string; values: unknown[] }
  read: (mode: 'share' | 'update') => { text: string; values: unknown[] }
}

const lockClause = (mode: 'share' | 'update') => (mode === 'share' ? 'FOR SHARE' : 'FOR NO KEY UPDATE')

function createFence(pool: pg.Pool, row: GenerationRow) {
  let generation: number | undefined
  return {
    /** Takes the next generation; waits for fenced transactions in flight, so none commits under the old one after it. */
    async claim(): Promise<number> {
      const { rows } = await pool.query<{ generation: string }>(row.claim.text, row.claim.values)
      generation = Number(rows[0]!.generation)
      return generation
    },
    generation: () => generation,
    /**
     * Throws {@link LeaseFencedError} when a newer generation was claimed. The row lock (share for
     * readers, no-key-update for writers of the row) makes a later claim wait for this transaction.
     */
    async check(client: pg.PoolClient, mode: 'share' | 'update' = 'share'): Promise<void> {
      if (generation === undefined) return
      const { text, values } = row.read(mode)
      const { rows } = await client.query<{ generation: string }>(text, values)
      const current = Number(rows[0]?.generation ?? 0)
      if (current !== generation) throw new LeaseFencedError(row.chainId, generation, current)
    },
  }
}

/**
 * The fencing token of a chain's scheduler lease: each new leader claims the next generation in
 * `chain_state`, and every transaction that decides what is canonical or final checks it still holds
 * the newest one, so a leader that stalled past its lease has its writes refused, not applied.
 * Until `claim` is called (a lone writer: tests, tools) the check passes.
 */
export function createLeaseFence(pool: pg.Pool, chainId: number) {
  return createFence(pool, {
    chainId,
    claim: {
      text: `INSERT INTO chain_state (chain_id, lease_generation) VALUES ($1, 1)
         ON CONFLICT (chain_id) DO UPDATE SET lease_generation = chain_state.lease_generation + 1
         RETURNING lease_generation AS generation`,
      values: [chainId],
    },
    read: (mode) => ({
      text: `SELECT lease_generation AS generation FROM chain_state WHERE chain_id = $1 ${lockClause(mode)}`,
      values: [chainId],
    }),
  })
}

/**
 * The fencing token of the delivery lease (the webhook dispatcher and reconciler, one for every chain):
 * its generation lives on the dispatcher's cursor row, so a dispatcher that stalled past its lease has
 * its dispatch rounds refused.
 */
export function createDeliveryLeaseFence(pool: pg.Pool) {
  return createFence(pool, {
    chainId: null,
    claim: {
      text: `UPDATE webhook_cursor SET lease_generation = lease_generation + 1 WHERE name = 'dispatch' RETURNING lease_generation AS generation`,
      values: [],
    },
    read: (mode) => ({
      text: `SELECT lease_generation AS generation FROM webhook_cursor WHERE name = 'dispatch' ${lockClause(mode)}`,
      values: [],
    }),
  })
}

export type LeaseFence = ReturnType<typeof createLeaseFence>
