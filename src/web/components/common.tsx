import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { BuilderCodeClientError } from '../api.js'
import { formatLocalTime, formatUtcTime, shortHex } from '../format.js'

/** A time in the browser's zone; its UTC form on hover. With the node's milliseconds (`ms`), to the millisecond. */
export function Time({ iso, ms }: { iso: string; ms?: number | null | undefined }) {
  const withMs = ms !== null && ms !== undefined
  const at = withMs ? new Date(ms).toISOString() : iso
  return (
    <time dateTime={at} title={formatUtcTime(at, withMs)}>
      {formatLocalTime(at, withMs)}
    </time>
  )
}

/** An address or hash shortened for the eye, whole for hover, copy and screen readers. */
export function Hex({ value }: { value: string }) {
  return (
    // biome-ignore lint/a11y/useAriaPropsSupportedByRole: screen readers read the whole value, not the shortened one
    <span class="hex" title={value} aria-label={value}>
      {shortHex(value)}
    </span>
  )
}

/** A table that scrolls sideways on a narrow screen, reachable and scrollable from the keyboard. */
export function TableRegion({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // A scrolling region is focusable so keyboard users can scroll it (axe: scrollable-region-focusable).
    // biome-ignore lint/a11y/useSemanticElements: a labelled region around a table, not a document section
    // biome-ignore lint/a11y/noNoninteractiveTabindex: see above
    <div class="table-region" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  )
}

export type Loaded<T> = { data: T | undefined; error: string | undefined; loading: boolean }

/**
 * Runs `load` when `key` changes and again every `refreshMs` (when given), keeping the last answer
 * while a new one loads; a failure is kept as a sentence to show.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, key: string, refreshMs?: number): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: undefined, error: undefined, loading: true })
  const loadRef = useRef(load)
  loadRef.current = load
  useEffect(() => {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    setState((previous) => ({ ...previous, loading: true }))
    const run = async () => {
      try {
        const data = await loadRef.current(controller.signal)
        setState({ data, error: undefined, loading: false })
      } catch (error) {
        if (controller.signal.aborted) return
        setState((previous) => ({ ...previous, error: describeError(error), loading: false }))
      }
      if (refreshMs !== undefined && !controller.signal.aborted) timer = setTimeout(run, refreshMs)
    }
    void run()
    return () => {
      controller.abort()
      clearTimeout(timer)
    }
  }, [key, refreshMs])
  return state
}

export function describeError(error: unknown): string {
  if (error instanceof BuilderCodeClientError) return error.message
  return `The API could not be reached: ${(error as Error).message}`
}

export function ErrorNote({ error }: { error: string | undefined }) {
  return error === undefined ? null : (
    <p class="error" role="alert">
      {error}
    </p>
  )
}

/** The page's heading, focused when the page opens so screen readers announce where the user is. */
export function PageHeading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null)
  useEffect(() => ref.current?.focus({ preventScroll: true }), [])
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children}
    </h1>
  )
}
