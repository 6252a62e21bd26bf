import type { Logger } from '../internal/logger.js'
import type { PendingLogsFilter, RpcClient } from '../rpc/index.js'
import { sleep } from '../utils/loop.js'
import { probeChain, type ChainProbe } from './probe.js'

/** How often the chain is probed again (one probe each time). */
export const PROBE_EVERY_MS = 5 * 60_000
/** Until a probe answers, the profile of a chain as codetrail followed every chain before it probed: 2 s blocks, pre-confirming. */
const UNPROBED = { blockTimeMs: 2_000, preconfirms: true } as const
/** A failed probe is tried again this soon, not at the next regular probe. */
const PROBE_RETRY_MS = 10_000
/** The head is never polled faster than this, whatever the measured cadence. */
export const MIN_HEAD_POLL_MS = 100

export type PreconfirmationsSetting = 'auto' | 'on' | 'off'

/** What the daemon knows of the chain it follows, and where each part comes from. */
export type ChainProfile = {
  blockTimeMs: number
  preconfirmations: { enabled: boolean; source: 'probe' | 'config' }
  /** Blocks behind the head taken as final where the node has no `finalized` tag. */
  finalityDepth: number
  /** How often the head is polled when no `newHeads` subscription brings it. */
  headPollMs: number
}

export type ChainProfileSettings = {
  preconfirmations: PreconfirmationsSetting
  /** `FINALITY_DEPTH`; unset: `finalitySeconds` over the measured block time. */
  finalityDepth: number | undefined
  finalitySeconds: number
  /** `HEAD_POLL_MS`; unset: the measured block time, never under {@link MIN_HEAD_POLL_MS}. */
  headPollMs: number | undefined
}

/** The profile a probe and the settings make: explicit settings win over what was measured. */
export function profileOf(probe: Pick<ChainProbe, 'blockTimeMs' | 'preconfirms'>, settings: ChainProfileSettings): ChainProfile {
  return {
    blockTimeMs: probe.blockTimeMs,
    preconfirmations:
      settings.preconfirmations === 'auto'
        ? { enabled: probe.preconfirms, source: 'probe' }
        : { enabled: settings.preconfirmations === 'on', source: 'config' },
    finalityDepth: settings.finalityDepth ?? Math.max(1, Math.ceil((settings.finalitySeconds * 1000) / probe.blockTimeMs)),
    headPollMs: settings.headPollMs ?? Math.max(MIN_HEAD_POLL_MS, probe.blockTimeMs),
  }
}

export type ChainProfilerParameters = {
  rpc: Pick<RpcClient, 'request' | 'batch'>
  logger: Logger
  chainId: number
  settings: ChainProfileSettings
  /** The followed filter, for the pending-logs sample. */
  filter?: PendingLogsFilter
  /** Where each new profile is kept for other processes (the API reads it from `chain_state`). */
  save?: (profile: ChainProfile) => Promise<void>
  probeEveryMs?: number
}

/**
 * The chain's profile, probed by `refresh` (the scheduler, before it follows) and again every few minutes
 * while `run` runs (every 10 s until a probe answers); `onChange`
 * listeners hear each profile that differs from the one before in pre-confirmations or cadence.
 */
export async function createChainProfiler({
  rpc,
  logger,
  chainId,
  settings,
  filter,
  save,
  probeEveryMs = PROBE_EVERY_MS,
}: ChainProfilerParameters) {
  // With pre-confirmations forced off, only the cadence is asked.
  const probe = () => probeChain(rpc, { ...(filter ? { filter } : {}), samples: settings.preconfirmations === 'auto' ? undefined : 0 })
  // Probed by the role that follows the chain (`refresh` before it starts): a backfill or a worker never
  // asks the node for it, and a node failing at start stops none of them.
  let probed = false
  let profile = profileOf(UNPROBED, settings)
  const listeners = new Set<(profile: ChainProfile) => void>()

  async function report(changed: boolean) {
    const { enabled, source } = profile.preconfirmations
    const fields = {
      chain_id: chainId,
      block_time_ms: profile.blockTimeMs,
      preconfirmations: enabled,
      preconfirmations_source: source,
      finality_depth: profile.finalityDepth,
      head_poll_ms: profile.headPollMs,
    }
    logger.info(fields, enabled ? 'chain profile: pre-confirmations through pending' : 'chain profile: no pre-confirmations on this chain')
    if (changed) for (const listener of listeners) listener(profile)
    await save?.(profile)
  }

  return {
    current: () => profile,
    onChange(listener: (profile: ChainProfile) => void): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    /** Probes once and publishes the result. */
    async refresh(): Promise<ChainProfile> {
      const next = profileOf(await probe(), settings)
      const first = !probed
      probed = true
      const changed = next.preconfirmations.enabled !== profile.preconfirmations.enabled || next.blockTimeMs !== profile.blockTimeMs
      profile = next
      if (changed || first) await report(changed)
      return profile
    },
    /** Probes again every `probeEveryMs` until `signal` aborts; a failed probe keeps the last profile. */
    async run(signal: AbortSignal): Promise<void> {
      while (!signal.aborted) {
        await sleep(probed ? probeEveryMs : Math.min(probeEveryMs, PROBE_RETRY_MS), signal)
        if (signal.aborted) break
        await this.refresh().catch((error: unknown) =>
          logger.warn({ chain_id: chainId, err: error }, 'chain probe failed: keeping the last profile'),
        )
      }
    },
  }
}

export type ChainProfiler = Awaited<ReturnType<typeof createChainProfiler>>

/**
 * Runs `task` while `profiler` says the chain pre-confirms, aborting it when a later probe says it
 * does not, and starting it again when one says it does.
 */
export async function whilePreconfirming(
  profiler: Pick<ChainProfiler, 'current' | 'onChange'>,
  signal: AbortSignal,
  task: (signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  while (!signal.aborted) {
    if (!profiler.current().preconfirmations.enabled) {
      await new Promise<void>((resolve) => {
        const done = () => {
          off()
          signal.removeEventListener('abort', done)
          resolve()
        }
        const off = profiler.onChange((profile) => profile.preconfirmations.enabled && done())
        signal.addEventListener('abort', done, { once: true })
      })
      continue
    }
    const term = new AbortController()
    const stop = () => term.abort()
    signal.addEventListener('abort', stop, { once: true })
    const off = profiler.onChange((profile) => !profile.preconfirmations.enabled && term.abort())
    try {
      await task(term.signal)
    } finally {
      off()
      signal.removeEventListener('abort', stop)
    }
    // The task ended on its own (not aborted): it is not started again until the profile changes.
    if (!term.signal.aborted) return
  }
}
