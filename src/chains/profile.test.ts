import { describe, expect, it } from 'vitest'
import { profileOf, whilePreconfirming, type ChainProfileSettings } from './profile.js'

const auto: ChainProfileSettings = { preconfirmations: 'auto', finalityDepth: undefined, finalitySeconds: 900, headPollMs: undefined }

describe('profileOf', () => {
  it('takes the probe verdict, polls the head at the block time and turns FINALITY_SECONDS into blocks of it', () => {
    expect(profileOf({ blockTimeMs: 200, preconfirms: false }, auto)).toEqual({
      blockTimeMs: 200,
      preconfirmations: { enabled: false, source: 'probe' },
      finalityDepth: 4_500,
      headPollMs: 200,
    })
    expect(profileOf({ blockTimeMs: 2_000, preconfirms: true }, auto)).toMatchObject({
      preconfirmations: { enabled: true, source: 'probe' },
      finalityDepth: 450,
      headPollMs: 2_000,
    })
  })

  it('never polls faster than 100 ms, and lets PRECONFIRMATIONS, FINALITY_DEPTH and HEAD_POLL_MS win over the probe', () => {
    expect(profileOf({ blockTimeMs: 50, preconfirms: false }, auto).headPollMs).toBe(100)
    const forced = profileOf(
      { blockTimeMs: 200, preconfirms: false },
      { preconfirmations: 'on', finalityDepth: 64, finalitySeconds: 900, headPollMs: 500 },
    )
    expect(forced).toEqual({ blockTimeMs: 200, preconfirmations: { enabled: true, source: 'config' }, finalityDepth: 64, headPollMs: 500 })
    expect(profileOf({ blockTimeMs: 250, preconfirms: true }, { ...auto, preconfirmations: 'off' }).preconfirmations).toEqual({
      enabled: false,
      source: 'config',
    })
  })
})

describe('whilePreconfirming', () => {
  it('starts the task only while the chain pre-confirms, stopping and starting it as later probes change their verdict', async () => {
    let profile = profileOf({ blockTimeMs: 200, preconfirms: false }, auto)
    const listeners = new Set<(p: typeof profile) => void>()
    const profiler = {
      current: () => profile,
      onChange: (listener: (p: typeof profile) => void) => (listeners.add(listener), () => listeners.delete(listener)),
    }
    const publish = (preconfirms: boolean) => {
      profile = profileOf({ blockTimeMs: 200, preconfirms }, auto)
      for (const listener of [...listeners]) listener(profile)
    }
    const runs: string[] = []
    const stop = new AbortController()
    const running = whilePreconfirming(profiler, stop.signal, (signal) => {
      runs.push('started')
      return new Promise<void>((resolve) => signal.addEventListener('abort', () => (runs.push('stopped'), resolve()), { once: true }))
    })
    const tick = () => new Promise((resolve) => setImmediate(resolve))
    await tick()
    expect(runs).toEqual([])
    publish(true)
    await tick()
    expect(runs).toEqual(['started'])
    publish(false)
    await tick()
    expect(runs).toEqual(['started', 'stopped'])
    publish(true)
    await tick()
    stop.abort()
    await running
    expect(runs).toEqual(['started', 'stopped', 'started', 'stopped'])
  })
})
