import type pg from 'pg'

/** Resolves once the statement of backend `pid` waits for a lock another transaction holds. */
export async function waitUntilBlocked(pool: pg.Pool, pid: number): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ waits: boolean }>(`SELECT cardinality(pg_blocking_pids($1)) > 0 AS waits`, [pid])
    if (rows[0]!.waits) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
