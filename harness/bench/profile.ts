/**
 * Where a process's CPU time went, from a V8 `.cpuprofile` (`node --cpu-prof`): self time by the
 * code it was spent in (a package, a folder of `src/`, JSON, GC), and inclusive time of chosen functions.
 */
import { readFileSync } from 'node:fs'

type CallFrame = { functionName: string; url: string }
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] }
type CpuProfile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

export type ProfileShare = { name: string; ms: number; share: number }

export type ProfileSummary = {
  /** Sampled time, idle included. */
  totalMs: number
  idleMs: number
  /** Self time by where it was spent, as shares of busy (non-idle) time. */
  byPlace: ProfileShare[]
  /** Time with the function anywhere on the stack, as shares of busy time. */
  inclusive: ProfileShare[]
}

const SPECIAL: Record<string, string> = {
  '(garbage collector)': 'GC',
  '(program)': 'V8 and native (program)',
  '(idle)': 'idle',
}

/** Where a frame's code lives: a package, a folder of the repo, or a node built-in. */
function placeOf(url: string): string | undefined {
  if (!url) return undefined
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (pkg) return pkg[1]
  const repo = /\/(src\/[^/]+|scripts)\//.exec(url)
  if (repo) return repo[1]!.replace(/\.ts$/, '')
  if (url.startsWith('node:internal/deps/undici')) return 'undici (fetch)'
  if (url.startsWith('node:'))
    return `node:${
      url
        .slice(5)
        .replace(/^internal\//, '')
        .split('/')[0]
    }`
  return undefined
}

/**
 * Summarises a profile: native leaves (a regexp, a string builtin) count where their nearest caller
 * with a source lives; `JSON.parse`/`JSON.stringify` count on their own. `window`: only samples taken
 * in it, in microseconds of the monotonic clock (see `monotonicUs`).
 */
export function summarizeCpuProfile(path: string, functions: readonly string[], window?: readonly [number, number]): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

  const placeCache = new Map<number, string>()
  const placeOfNode = (id: number): string => {
    const cached = placeCache.get(id)
    if (cached) return cached
    const frame = byId.get(id)!.callFrame
    let place = SPECIAL[frame.functionName]
    if (!place && !frame.url && (frame.functionName === 'parse' || frame.functionName === 'stringify')) place = `JSON.${frame.functionName}`
    for (let at: number | undefined = id; !place && at !== undefined; at = parent.get(at)) place = placeOf(byId.get(at)!.callFrame.url)
    place ??= 'other'
    placeCache.set(id, place)
    return place
  }
  const stackCache = new Map<number, Set<string>>()
  const functionsOnStack = (id: number): Set<string> => {
    let names = stackCache.get(id)
    if (!names) {
      names = new Set()
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const frame = byId.get(at)!.callFrame
        const name = frame.url || !['parse', 'stringify'].includes(frame.functionName) ? frame.functionName : `JSON.${frame.functionName}`
        if (functions.includes(name)) names.add(name)
      }
      stackCache.set(id, names)
    }
    return names
  }

  const places = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let totalUs = 0
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0
    at += us
    if (window && (at < window[0] || at > window[1])) return
    totalUs += us
    const place = placeOfNode(id)
    places.set(place, (places.get(place) ?? 0) + us)
    for (const name of functionsOnStack(id)) inclusive.set(name, (inclusive.get(name) ?? 0) + us)
  })
  const idleUs = places.get('idle') ?? 0
  places.delete('idle')
  const busyUs = totalUs - idleUs
  const shares = (entries: Map<string, number>) =>
    [...entries].map(([name, us]) => ({ name, ms: us / 1000, share: us / busyUs })).sort((a, b) => b.ms - a.ms)
  return { totalMs: totalUs / 1000, idleMs: idleUs / 1000, byPlace: shares(places), inclusive: shares(inclusive) }
}
