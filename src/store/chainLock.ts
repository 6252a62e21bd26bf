import type pg from 'pg'

// First keys of the two-key advisory locks; the chain id is the second.
const TIP_WRITES_LOCK = 0x63747477
const FORK_MARKS_LOCK = 0x6374666d

/**
 * Serialises the writers that decide which rows at a chain's tip are canonical (tip blocks, reorg and
 * orphan marks, pending upserts) inside the caller's transaction: a pending poll can no longer read the
 * live block or a transaction's status from before a tip commit landing at the same moment. Taken in a
 * statement of its own, so the statements after it see everything committed before it was granted.
 */
export async function lockTipWrites(client: pg.PoolClient, chainId: number): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [TIP_WRITES_LOCK, chainId])
}

/**
 * Orders range-job commits against reorg and orphan marks: marks take it exclusively, range jobs
 * shared (they commit side by side), so a range job checks its blocks against every mark before it and
 * every mark after it sees the range job's rows. Tip writes and pending polls never wait for range jobs.
 */
export async function lockForkMarks(client: pg.PoolClient, chainId: number, mode: 'mark' | 'store'): Promise<void> {
  await client.query(mode === 'mark' ? 'SELECT pg_advisory_xact_lock($1, $2)' : 'SELECT pg_advisory_xact_lock_shared($1, $2)', [
    FORK_MARKS_LOCK,
    chainId,
  ])
}
