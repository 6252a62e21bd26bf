/**
 * Test-only fault hook: where `CODETRAIL_CRASH_AT` names this point, the process kills itself with
 * SIGKILL on reaching it, the way a power cut or an OOM kill would, so the fault suite and the seeded
 * simulation can stop a process exactly between two steps that must not depend on each other.
 * Unset in production: one string compare per call.
 */
export type CrashPoint =
  | 'reorg-marked'
  | 'orphans-marked'
  | 'tip-read'
  | 'tip-stored'
  | 'range-stored'
  | 'pending-stored'
  | 'repairs-enqueued'
  | 'events-published'
  | 'events-dispatched'
  | 'drains-reconciled'
  | 'delivery-sent'

export function crashPoint(point: CrashPoint): void {
  if (process.env.CODETRAIL_CRASH_AT === point) process.kill(process.pid, 'SIGKILL')
  // `CODETRAIL_STOP_AT` stalls the process there instead (SIGSTOP, once), the way a long GC pause or a frozen VM would.
  if (process.env.CODETRAIL_STOP_AT === point) {
    delete process.env.CODETRAIL_STOP_AT
    process.kill(process.pid, 'SIGSTOP')
  }
}
