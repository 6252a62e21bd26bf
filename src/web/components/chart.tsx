import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { useEffect, useRef } from 'preact/hooks'
import { formatInteger } from '../format.js'

/** Distinguishable in light and dark themes and for the common colour-vision deficiencies (Okabe–Ito). */
const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#f0e442']
const HEIGHT = 260

export type ChartSeries = { label: string; values: number[] }

/**
 * Attributed transactions over time, one line per series; `times` are the bucket starts (epoch
 * seconds). The figure is described in words for screen readers, the lines drawn with uPlot.
 */
export function TimeChart({
  title,
  times,
  series,
  description,
}: {
  title: string
  times: number[]
  series: ChartSeries[]
  description: string
}) {
  const container = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const element = container.current
    if (!element) return
    const plot = new uPlot(
      {
        width: Math.max(element.clientWidth, 240),
        height: HEIGHT,
        series: [
          {},
          ...series.map((line, i) => ({
            label: line.label,
            stroke: PALETTE[i % PALETTE.length],
            width: 2,
            points: { show: times.length < 60 },
            value: (_plot: uPlot, value: number | null) => (value === null ? '–' : formatInteger(value)),
          })),
        ],
        axes: [{}, { values: (_plot, ticks) => ticks.map((tick) => formatInteger(tick)) }],
        scales: { y: { range: (_plot, _min, max) => [0, Math.max(1, max)] } },
        legend: { live: true },
      },
      [times, ...series.map((line) => line.values)],
      element,
    )
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 240), height: HEIGHT }))
    observer.observe(element)
    return () => {
      observer.disconnect()
      plot.destroy()
    }
  }, [times, series])
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={container} role="img" aria-label={description} />
    </figure>
  )
}
