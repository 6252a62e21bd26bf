import type pg from 'pg'
import { CodetrailError } from '../internal/errors.js'

/** A write refused because another scheduler claimed the chain's lease generation after this one. */
export class LeaseFencedError extends CodetrailError {
  constructor(
    readonly chainId: number,
    readonly generation: number,
    readonly current: number,
  ) {
    super(`scheduler lease generation ${generation} of chain ${chainId} is stale (now ${current}): write refused`)
    this.name = 'LeaseFencedError'
  }
}

/** Checks, inside a caller's transaction, that its writer still holds the newest lease generation. */
export type Fence = (client: pg.PoolClient, mode?: 'share' | 'update') => Promise<void>

/**
 * The fencing token of a chain's scheduler lease: each new leader claims the next generation in
 * `chain_state`, and every transaction that decides what is canonical or final checks it still holds
 * the newest one, so a leader that stalled past its lease has its writes refused, not applied.
 * Until `claim` is called (a lone writer: tests, tools) the check passes.
 */
export function createLeaseFence(pool: pg.Pool, chainId: number) {
  let generation: number | undefined
  return {
    /** Takes the next generation; waits for fenced transactions in flight, so none commits under the old one after it. */
    async claim(): Promise<number> {
      const { rows } = await pool.query<{ generation: string }>(
        `INSERT INTO chain_state (chain_id, lease_generation) VALUES ($1, 1)
         ON CONFLICT (chain_id) DO UPDATE SET lease_generation = chain_state.lease_generation + 1
         RETURNING lease_generation AS generation`,
        [chainId],
      )
      generation = Number(rows[0]!.generation)
      return generation
    },
    generation: () => generation,
    /**
     * Throws {@link LeaseFencedError} when a newer generation was claimed. The row lock (share for
     * readers, no-key-update for writers of `chain_state`) makes a later claim wait for this transaction.
     */
    check(client: pg.PoolClient, mode: 'share' | 'update' = 'share'): Promise<void> {
      return generation === undefined ? Promise.resolve() : checkLeaseGeneration(client, chainId, generation, mode)
    },
  }
}

export type LeaseFence = ReturnType<typeof createLeaseFence>

export async function checkLeaseGeneration(
  client: pg.PoolClient,
  chainId: number,
  generation: number,
  mode: 'share' | 'update',
): Promise<void> {
  const { rows } = await client.query<{ generation: string }>(
    `SELECT lease_generation AS generation FROM chain_state WHERE chain_id = $1 ${mode === 'share' ? 'FOR SHARE' : 'FOR NO KEY UPDATE'}`,
    [chainId],
  )
  const current = Number(rows[0]?.generation ?? 0)
  if (current !== generation) throw new LeaseFencedError(chainId, generation, current)
}
